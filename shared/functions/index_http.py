"""The index service's HTTP trigger: every `/api/index/v1/...` request."""

import azure.functions as func

from shared.api.index_api import ENDPOINTS, SERVICE_ROOT
from shared.functions.http_bindings import METHODS, serve

bp = func.Blueprint()


@bp.route(route="index/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def index_api(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)
