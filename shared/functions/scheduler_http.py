"""The task-graph scheduler's HTTP trigger: every `/api/scheduler/v1/...` request."""

import azure.functions as func

from shared.api.scheduler_api import ENDPOINTS, SERVICE_ROOT
from shared.functions.http_bindings import METHODS, serve

bp = func.Blueprint()


@bp.route(route="scheduler/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def scheduler_api(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)
