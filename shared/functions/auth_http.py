"""The auth service's HTTP trigger: every `/api/auth/v1/...` request."""

import azure.functions as func

from shared.api.auth_api import ENDPOINTS, SERVICE_ROOT
from shared.functions.http_bindings import METHODS, serve

bp = func.Blueprint()


@bp.route(route="auth/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def auth_api(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)
