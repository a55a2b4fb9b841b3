"""The worker manager's HTTP trigger: every `/api/worker-manager/v1/...` request."""

import azure.functions as func

from shared.api.worker_manager_api import ENDPOINTS, SERVICE_ROOT
from shared.functions.http_bindings import METHODS, serve

bp = func.Blueprint()


@bp.route(route="worker-manager/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def worker_manager_api(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)
