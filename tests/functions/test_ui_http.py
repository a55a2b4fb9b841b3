"""The browser view's bindings: anonymous HTTP functions under /api/ui/ (the pages GET only;
the data GET and POST, for the feeds)."""

import azure.functions as func

from tests.functions.test_function_app import functions_by_name


def _methods(trigger) -> list[str]:
    return [str(getattr(method, "value", method)) for method in trigger.methods]


def test_pages_and_data_are_two_routes_under_ui():
    routes = {name: functions_by_name()[name].get_trigger() for name in ("ui_pages", "ui_data")}
    assert routes["ui_pages"].route == "ui/{*path}" and routes["ui_data"].route == "ui/data/{*path}"
    assert _methods(routes["ui_pages"]) == ["GET"]
    assert _methods(routes["ui_data"]) == ["GET", "POST"]   # POST opens a feed of a group's events


def test_the_page_function_answers_without_storage():
    handler = functions_by_name()["ui_pages"].get_user_function()
    request = func.HttpRequest(method="GET", url="http://localhost:7071/api/ui/", headers={}, params={},
                               route_params={"path": ""}, body=b"")
    response = handler(request)
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert b"data/task-groups" in response.get_body()
