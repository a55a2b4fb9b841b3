"""The secrets service's API (`/api/secrets/v1/...`), declared as data: Taskcluster's names and
routes. A secret's name may hold `/`: the route's final `<name>` takes the rest of the path.
The value of `set` is never shown in an error (`hidden`), as Taskcluster's `cleanPayload`.
"""

from __future__ import annotations

from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/secrets/v1"

ENDPOINTS = [
    *service_calls("Secrets service", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("set", "PUT", "/secret/<name>",
             lambda call: call.services.secrets.set(call.params["name"], call.body, by=call.actor),
             input_schema="secrets/secret", hidden=("secret",)),
    Endpoint("remove", "DELETE", "/secret/<name>",
             lambda call: call.services.secrets.remove(call.params["name"], by=call.actor)),
    Endpoint("get", "GET", "/secret/<name>", lambda call: call.services.secrets.get(call.params["name"]),
             output_schema="secrets/secret"),
    Endpoint("list", "GET", "/secrets", lambda call: paged(call.query, call.services.secrets.list),
             query=("continuationToken", "limit"), output_schema="secrets/secret-list"),
]
