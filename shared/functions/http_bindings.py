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


@lru_cache(maxsize=1)
def app_access() -> Access:
    """Who may call: the clients and roles of the app settings and those the auth service keeps."""
    return Access.from_settings(Settings.from_environ(), get_services().directory)


def serve(req: func.HttpRequest, endpoints: list, service_root: str, access=app_access) -> func.HttpResponse:
    """`access`: who may call (the process's, from the app settings, unless a test says)."""
    request = ApiRequest.from_url(req.method, req.url, service_root, req.get_body(), dict(req.headers))
    response = dispatch(endpoints, request, get_services, access)
    return func.HttpResponse(body=response.encoded(), status_code=response.status,
                             headers=response.headers, mimetype="application/json", charset="utf-8")
