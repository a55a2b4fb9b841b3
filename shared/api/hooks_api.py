"""The hooks API (`/api/hooks/v1/...`), declared as data: Taskcluster's names and routes.

Served by the same Function App as the Queue, so `taskcluster.Hooks({"rootUrl": ...})`
reaches it at the Queue's root URL. A hookId may hold `/`: the client sends it as `%2F`.
"""

from __future__ import annotations

from functools import partial

from shared.api.dispatch import Call
from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/hooks/v1"
HOOK = "/hooks/<hookGroupId>/<hookId>"


def _ids(call: Call) -> tuple[str, str]:
    return call.params["hookGroupId"], call.params["hookId"]


ENDPOINTS = [
    *service_calls("Hooks service", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("listHookGroups", "GET", "/hooks", lambda call: call.services.hooks.groups(),
             output_schema="hooks/list-hook-groups-response"),
    Endpoint("listHooks", "GET", "/hooks/<hookGroupId>",
             lambda call: call.services.hooks.list(call.params["hookGroupId"]),
             output_schema="hooks/list-hooks-response"),
    Endpoint("hook", "GET", HOOK, lambda call: call.services.hooks.get(*_ids(call)),
             output_schema="hooks/hook-definition"),
    Endpoint("getHookStatus", "GET", HOOK + "/status", lambda call: call.services.hooks.status(*_ids(call)),
             output_schema="hooks/hook-status"),
    Endpoint("createHook", "PUT", HOOK, lambda call: call.services.hooks.create(*_ids(call), call.body, by=call.actor),
             input_schema="hooks/create-hook-request", output_schema="hooks/hook-definition"),
    Endpoint("updateHook", "POST", HOOK, lambda call: call.services.hooks.update(*_ids(call), call.body, by=call.actor),
             input_schema="hooks/create-hook-request", output_schema="hooks/hook-definition"),
    Endpoint("removeHook", "DELETE", HOOK, lambda call: call.services.hooks.remove(*_ids(call), by=call.actor)),
    Endpoint("triggerHook", "POST", HOOK + "/trigger",
             lambda call: call.services.hooks.trigger(*_ids(call), call.body, call.client_id),
             input_schema="hooks/trigger-hook", output_schema="hooks/trigger-hook-response"),
    Endpoint("getTriggerToken", "GET", HOOK + "/token", lambda call: call.services.hooks.token(*_ids(call)),
             output_schema="hooks/trigger-token-response"),
    Endpoint("resetTriggerToken", "POST", HOOK + "/token", lambda call: call.services.hooks.reset_token(*_ids(call)),
             output_schema="hooks/trigger-token-response"),
    Endpoint("triggerHookWithToken", "POST", HOOK + "/trigger/<token>",
             lambda call: call.services.hooks.trigger_with_token(*_ids(call), call.params["token"], call.body),
             input_schema="hooks/trigger-hook", output_schema="hooks/trigger-hook-response"),
    Endpoint("listLastFires", "GET", HOOK + "/last-fires",
             lambda call: paged(call.query, partial(call.services.hooks.last_fires, *_ids(call))),
             query=("continuationToken", "limit"), output_schema="hooks/list-lastFires-response"),
]
