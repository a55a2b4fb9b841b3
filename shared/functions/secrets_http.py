"""The secrets service's HTTP trigger: every `/api/secrets/v1/...` request."""

import azure.functions as func

from shared.api.secrets_api import ENDPOINTS, SERVICE_ROOT
from shared.functions.http_bindings import METHODS, serve

bp = func.Blueprint()


@bp.route(route="secrets/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def secrets_api(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)
