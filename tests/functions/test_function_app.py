"""The Function App's bindings: what Azure (or the local host) reads from function_app.py."""

import json
from pathlib import Path

import azure.functions as func

from function_app import app


# get_functions() indexes the app and refuses to run twice in one process, as in Azure.
FUNCTIONS = {function.get_function_name(): function for function in app.get_functions()}


def functions_by_name() -> dict:
    return FUNCTIONS


def test_the_queue_api_is_one_anonymous_http_function_under_queue_v1():
    function = functions_by_name()["queue_api"]
    trigger = function.get_trigger()
    assert trigger.type == "httpTrigger"
    assert trigger.route == "queue/v1/{*path}"
    assert {str(getattr(method, "value", method)) for method in trigger.methods} >= {"GET", "POST", "PUT"}
    assert str(getattr(trigger.auth_level, "value", trigger.auth_level)).lower() == "anonymous"


def test_the_hooks_service_is_one_anonymous_http_function_under_hooks_v1():
    trigger = functions_by_name()["hooks_api"].get_trigger()
    assert trigger.type == "httpTrigger" and trigger.route == "hooks/v1/{*path}"
    assert str(getattr(trigger.auth_level, "value", trigger.auth_level)).lower() == "anonymous"


def test_the_object_service_is_one_anonymous_http_function_under_object_v1():
    trigger = functions_by_name()["object_api"].get_trigger()
    assert trigger.type == "httpTrigger" and trigger.route == "object/v1/{*path}"
    assert str(getattr(trigger.auth_level, "value", trigger.auth_level)).lower() == "anonymous"


def test_the_worker_manager_api_is_one_anonymous_http_function_under_worker_manager_v1():
    trigger = functions_by_name()["worker_manager_api"].get_trigger()
    assert trigger.type == "httpTrigger" and trigger.route == "worker-manager/v1/{*path}"
    assert {str(getattr(method, "value", method)) for method in trigger.methods} >= {"GET", "POST", "PUT", "DELETE"}
    assert str(getattr(trigger.auth_level, "value", trigger.auth_level)).lower() == "anonymous"


def call(method: str, path: str, body: bytes = b"") -> func.HttpResponse:
    handler = functions_by_name()["queue_api"].get_user_function()
    request = func.HttpRequest(method=method, url=f"http://localhost:7071/api/queue/v1{path}",
                               headers={}, params={}, route_params={"path": path.lstrip("/")}, body=body)
    return handler(request)


def test_the_user_function_answers_ping_without_storage():
    response = call("GET", "/ping")
    assert response.status_code == 200 and json.loads(response.get_body())["alive"] is True
    assert response.mimetype == "application/json"


def test_the_user_function_renders_errors_in_taskclusters_shape():
    response = call("GET", "/not/an/endpoint")
    body = json.loads(response.get_body())
    assert response.status_code == 404 and body["code"] == "ResourceNotFound"
    response = call("PUT", "/task/not-a-slug", b"{}")
    assert response.status_code == 400 and json.loads(response.get_body())["code"] == "InvalidRequestArguments"


def test_time_driven_functions_are_timers_whose_schedules_are_app_settings():
    schedules = {name: function.get_trigger().schedule for name, function in functions_by_name().items()
                 if function.get_trigger().type == "timerTrigger" and name != "startup"}
    assert schedules == {
        "repair_sweep": "%QUEUE_REPAIR_SCHEDULE%",
        "claim_resolver": "%QUEUE_CLAIM_RESOLVER_SCHEDULE%",
        "deadline_resolver": "%QUEUE_DEADLINE_RESOLVER_SCHEDULE%",
        "expiration_sweep": "%QUEUE_EXPIRATION_SCHEDULE%",
        "watchdog": "%QUEUE_WATCHDOG_SCHEDULE%",
        "hooks_scheduler": "%HOOKS_SCHEDULER_SCHEDULE%",
        "provisioner_sweep": "%WORKER_MANAGER_PROVISIONER_SCHEDULE%",
    }
    sample = json.loads((Path(__file__).parents[2] / "local.settings.sample.json").read_text())["Values"]
    assert all(setting.strip("%") in sample for setting in schedules.values())


def test_the_startup_function_runs_when_the_host_starts():
    # Its work (building the services, so the event bus declares its exchanges) is at start;
    # its fixed daily run after that only re-declares, so it needs no app setting.
    trigger = functions_by_name()["startup"].get_trigger()
    assert trigger.type == "timerTrigger" and trigger.run_on_startup is True


def test_queue_driven_functions_bind_to_queues_named_by_app_settings():
    queues = {name: function.get_trigger().queue_name for name, function in functions_by_name().items()
              if function.get_trigger().type == "queueTrigger"}
    assert queues == {"dependency_resolver": "%QUEUE_RESOLVED_QUEUE%", "graph_part_creator": "%QUEUE_GRAPH_QUEUE%",
                      "provisioner_wake_up": "%WORKER_MANAGER_QUEUE%"}
    sample = json.loads((Path(__file__).parents[2] / "local.settings.sample.json").read_text())["Values"]
    assert all(setting.strip("%") in sample for setting in queues.values())


def test_every_services_function_takes_browsers_preflights_and_answers_them_with_cors():
    """The Functions host routes OPTIONS to a function only when its trigger lists it."""
    for name in ("queue_api", "scheduler_api", "object_api", "hooks_api", "index_api", "secrets_api",
                 "worker_manager_api", "auth_api"):
        trigger = functions_by_name()[name].get_trigger()
        assert "OPTIONS" in {str(getattr(method, "value", method)) for method in trigger.methods}, name
    response = call("OPTIONS", "/task/abc")
    assert response.status_code == 200 and response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.headers["Allow"] == "GET,PUT"
    assert call("GET", "/ping").headers["Access-Control-Allow-Origin"] == "*"
