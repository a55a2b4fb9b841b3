"""Turning a Functions HTTP request into an API request and the answer back."""

from functools import lru_cache

import azure.functions as func

from shared.api.access import Access
from shared.api.dispatch import dispatch
from shared.api.http import ApiRequest
from shared.config import Settings
from shared.services.wiring import get_services

# OPTIONS: browsers' preflights, which the API answers (shared/api/cors.py).
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


class _ServicesDirectory:
    """The auth service's directory, reached through the services when first asked: a call
    that needs no stored client or role (a public one, one signed by a configured client with
    the roles read lately) builds nothing."""

    def client(self, client_id: str):
        return get_services().directory.client(client_id)

    def roles(self):
        return get_services().directory.roles()


@lru_cache(maxsize=1)
def app_access() -> Access:
    """Who may call: the clients and roles of the app settings and those the auth service keeps."""
    return Access.from_settings(Settings.from_environ(), _ServicesDirectory())


def serve(req: func.HttpRequest, endpoints: list, service_root: str, access=app_access) -> func.HttpResponse:
    """`access`: who may call (the process's, from the app settings, unless a test says)."""
    request = ApiRequest.from_url(req.method, req.url, service_root, req.get_body(), dict(req.headers))
    response = dispatch(endpoints, request, get_services, access)
    return func.HttpResponse(body=response.encoded(), status_code=response.status,
                             headers=response.headers, mimetype="application/json", charset="utf-8")
