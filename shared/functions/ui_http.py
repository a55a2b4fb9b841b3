"""The browser view's HTTP triggers: its pages (`/api/ui/...`) and its data (`/api/ui/data/...`:
the recent groups, and the feeds of a group's events, POST to open one, GET to long-poll it)."""

import azure.functions as func

from shared.api.ui_api import ENDPOINTS, SERVICE_ROOT
from shared.ui.pages import page
from shared.functions.http_bindings import serve

bp = func.Blueprint()


@bp.route(route="ui/data/{*path}", methods=["GET", "POST"], auth_level=func.AuthLevel.ANONYMOUS)
def ui_data(req: func.HttpRequest) -> func.HttpResponse:
    return serve(req, ENDPOINTS, SERVICE_ROOT)


@bp.route(route="ui/{*path}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def ui_pages(req: func.HttpRequest) -> func.HttpResponse:
    answer = page(req.route_params.get("path") or "")
    return func.HttpResponse(body=answer.body, status_code=answer.status, mimetype=answer.content_type,
                             charset="utf-8", headers={"Cache-Control": answer.cache})
