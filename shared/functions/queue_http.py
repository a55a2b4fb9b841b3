"""The Queue's HTTP trigger: every `/api/queue/v1/...` request, translated to the API and back."""

import azure.functions as func

from ..api.dispatch import dispatch
from ..api.http import ApiRequest
from ..api.queue_api import ENDPOINTS, SERVICE_ROOT
from ..services.queue import get_queue

bp = func.Blueprint()

METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]


@bp.route(route="queue/v1/{*path}", methods=METHODS, auth_level=func.AuthLevel.ANONYMOUS)
def queue_api(req: func.HttpRequest) -> func.HttpResponse:
    request = ApiRequest.from_url(req.method, req.url, SERVICE_ROOT, req.get_body(), dict(req.headers))
    response = dispatch(ENDPOINTS, request, get_queue)
    return func.HttpResponse(body=response.encoded(), status_code=response.status,
                             headers=response.headers, mimetype="application/json", charset="utf-8")
