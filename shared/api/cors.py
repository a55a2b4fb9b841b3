"""Cross-origin calls: what lets a page on another origin (taskcluster-client-web, a
Taskcluster-style UI) call every service, as Taskcluster's API library allows them.

Every answer carries Taskcluster's CORS headers, whatever its status (its `corsHeaders`
middleware runs before routing). A preflight (`OPTIONS`) is answered 200, without
credentials (a browser sends none with it), for a path some endpoint serves, with `Allow`
naming the methods it serves there, as Express's router answers it; for a path no endpoint
serves it is a 404, with the same headers. The app answers preflights itself: neither the
Functions host's CORS setting (`Host.CORS` in local.settings.json) nor Azure's should be set,
or they would answer in its place.
"""

from __future__ import annotations

from shared.api.http import ApiResponse
from shared.api.router import Endpoint, match

# Taskcluster's values (libraries/api/src/api.js, corsHeaders), header for header.
HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Max-Age": "900",
    "Access-Control-Allow-Methods": "OPTIONS,GET,HEAD,POST,PUT,DELETE,TRACE,CONNECT",
    "Access-Control-Request-Method": "*",
    "Access-Control-Allow-Headers": "X-Requested-With,Content-Type,Authorization,Accept,Origin,Cache-Control",
}


def served_methods(endpoints: list[Endpoint], raw_path: str) -> list[str]:
    """The methods some endpoint serves at this path, in the order they are declared."""
    methods = dict.fromkeys(endpoint.method for endpoint in endpoints)
    return [method for method in methods if match(endpoints, method, raw_path) is not None]


def preflight(endpoints: list[Endpoint], raw_path: str) -> ApiResponse | None:
    """The answer to an OPTIONS request, or None when no endpoint serves the path."""
    methods = served_methods(endpoints, raw_path)
    return ApiResponse(200, None, {"Allow": ",".join(methods)}) if methods else None


def with_headers(response: ApiResponse) -> ApiResponse:
    response.headers.update(HEADERS)
    return response
