"""The browser view's bindings: GET-only anonymous HTTP functions under /api/ui/."""

import azure.functions as func

from tests.functions.test_function_app import functions_by_name


def test_pages_and_data_are_two_get_routes_under_ui():
    routes = {name: functions_by_name()[name].get_trigger() for name in ("ui_pages", "ui_data")}
    assert routes["ui_pages"].route == "ui/{*path}" and routes["ui_data"].route == "ui/data/{*path}"
    for trigger in routes.values():
        assert [str(getattr(method, "value", method)) for method in trigger.methods] == ["GET"]


def test_the_page_function_answers_without_storage():
    handler = functions_by_name()["ui_pages"].get_user_function()
    request = func.HttpRequest(method="GET", url="http://localhost:7071/api/ui/", headers={}, params={},
                               route_params={"path": ""}, body=b"")
    response = handler(request)
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert b"data/task-groups" in response.get_body()
