"""LocalHost reads each function's trigger from the app: HTTP routes under the routePrefix,
queue names and timer schedules through `%SETTING%` expressions, with host.json's queue options."""

from __future__ import annotations

import base64

import azure.functions as func
import pytest
import requests
from azure.storage.queue import QueueClient

from devhost.host import LocalHost

from tests.devhost.conftest import eventually, unique_queue_name


def test_all_three_trigger_kinds_run_from_one_app(azurite, local_host, monkeypatch):
    queue_name = unique_queue_name()
    monkeypatch.setenv("AzureWebJobsStorage", azurite.connection_string)
    monkeypatch.setenv("DH_TEST_QUEUE", queue_name)
    monkeypatch.setenv("DH_TEST_SCHEDULE", "* * * * * *")
    app, messages, ticks = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS), [], []

    @app.route(route="hello/{name}", methods=["GET"])
    def hello(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(f"hello {req.route_params['name']}")

    @app.queue_trigger(arg_name="message", queue_name="%DH_TEST_QUEUE%", connection="AzureWebJobsStorage")
    def on_message(message: func.QueueMessage) -> None:
        messages.append(message.get_body())

    @app.timer_trigger(schedule="%DH_TEST_SCHEDULE%", arg_name="timer")
    def tick(timer: func.TimerRequest) -> None:
        ticks.append(timer)

    host = local_host(app, {"http": {"routePrefix": "v2"},
                            "queues": {"batchSize": 2, "maxPollingInterval": "00:00:00.5"}})

    assert [poller.queue.queue_name for poller in host.pollers] == [queue_name]
    assert host.pollers[0].config.batch_size == 2  # from this app dir's host.json
    assert [timer.schedule.expression for timer in host.timers] == ["* * * * * *"]

    assert requests.get(f"{host.base_url}/v2/hello/world", timeout=5).text == "hello world"
    queue = QueueClient.from_connection_string(azurite.connection_string, queue_name)
    queue.send_message(base64.b64encode(b"from the queue").decode())
    eventually(lambda: messages == [b"from the queue"], message="the queue trigger")
    eventually(lambda: ticks, timeout=5, message="the timer trigger")
    queue.delete_queue()


def test_a_missing_setting_in_a_binding_expression_stops_the_host_from_loading(tmp_path, monkeypatch):
    monkeypatch.delenv("DH_UNDEFINED_SCHEDULE", raising=False)
    app = func.FunctionApp()

    @app.timer_trigger(schedule="%DH_UNDEFINED_SCHEDULE%", arg_name="timer")
    def tick(timer: func.TimerRequest) -> None:
        pass

    with pytest.raises(KeyError, match="DH_UNDEFINED_SCHEDULE"):
        LocalHost(tmp_path, port=0, app=app)


def test_an_unsupported_trigger_is_refused(tmp_path):
    app = func.FunctionApp()

    @app.blob_trigger(arg_name="blob", path="container/{name}", connection="AzureWebJobsStorage")
    def on_blob(blob: func.InputStream) -> None:
        pass

    with pytest.raises(ValueError, match="blobTrigger"):
        LocalHost(tmp_path, port=0, app=app)
