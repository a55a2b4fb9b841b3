"""The feeds of a group's events (`/api/ui/data/task-group/<taskGroupId>/feed`): over HTTP on
a real host and RabbitMQ, read as the browser reads them (no credentials: anonymous callers
may list a group, so they may follow it); bad input answered 400 in Taskcluster's shape, an
unknown or foreign feed 404; and, in process, a deployment without a bus (the page polls),
a bus that cannot be reached (polls, then 503), and a deployment closed to anonymous callers
(403, as listTaskGroup)."""

from __future__ import annotations

import pytest
import requests

from devhost.processes import free_port
from shared.api import ui_api
from shared.api.access import Access
from shared.api.dispatch import dispatch
from shared.api.http import ApiRequest
from shared.config import Settings
from shared.domain.ids import new_slugid
from shared.events.amqp_feed import AmqpFeeds
from tests.conftest import memory_services


def feed_url(server, group_id: str, feed_id: str = "") -> str:
    return f"{server.root_url}/api/ui/data/task-group/{group_id}/feed" + (f"/{feed_id}" if feed_id else "")


def open_feed(server, group_id: str) -> dict:
    answer = requests.post(feed_url(server, group_id), timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_browser_follows_a_groups_events_without_credentials(server, queue, new_task):
    group_id, task_id = new_slugid(), new_slugid()
    feed = open_feed(server, group_id)
    assert feed["live"] is True and len(feed["feedId"]) == 22 and feed["taskGroupId"] == group_id
    queue.createTask(task_id, new_task(taskGroupId=group_id))
    queue.createTask(new_slugid(), new_task(taskGroupId=new_slugid()))   # another group's
    events = []
    while len(events) < 2:
        answer = requests.get(feed_url(server, group_id, feed["feedId"]), params={"wait": "10"}, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["events"], "a read waited 10 s without an event"
        events += answer.json()["events"]
    assert [event["exchange"] for event in events] == ["task-defined", "task-pending"]
    assert {event["payload"]["status"]["taskId"] for event in events} == {task_id}
    assert events[1]["payload"]["status"]["state"] == "pending" and events[1]["id"] == f"{task_id}/task-pending/0"
    empty = requests.get(feed_url(server, group_id, feed["feedId"]), params={"wait": "0"}, timeout=10)
    assert empty.json()["events"] == []


def _refusal(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["code"] == code and body["message"] and "requestInfo" in body
    return body


@pytest.mark.parametrize("path, query", [
    ("/feed/short", {}), ("/feed/" + "x" * 21 + "!", {}), ("/feed/" + "a" * 23, {}),
    ("/feed/" + "a" * 22, {"wait": "soon"}), ("/feed/" + "a" * 22, {"wait": "-1"}),
    ("/feed/" + "a" * 22, {"wait": "1" * 50}), ("/feed/" + "a" * 22, {"limit": "0"}),
])
def test_bad_input_is_400_in_taskclusters_shape(server, path, query):
    answer = requests.get(f"{server.root_url}/api/ui/data/task-group/{new_slugid()}{path}", params=query, timeout=10)
    _refusal(answer, 400, "InvalidRequestArguments")
    _refusal(requests.post(f"{server.root_url}/api/ui/data/task-group/not-a-group/feed", timeout=10), 400,
             "InvalidRequestArguments")


def test_an_unknown_feed_or_another_groups_is_404(server):
    group_id = new_slugid()
    _refusal(requests.get(feed_url(server, group_id, "A" * 22), timeout=10), 404, "ResourceNotFound")
    feed = open_feed(server, group_id)
    _refusal(requests.get(feed_url(server, new_slugid(), feed["feedId"]), params={"wait": "0"}, timeout=10),
             404, "ResourceNotFound")


def call(endpoint_path: str, method: str, services, anonymous_scopes: str = "") -> tuple[int, dict]:
    settings = Settings(storage_connection="memory", table_prefix="t", claim_timeout=1200, claim_work_wait=1,
                        credentials_client_id="queue", credentials_access_token="test-token",
                        anonymous_scopes=anonymous_scopes)
    request = ApiRequest.from_url(method, f"http://127.0.0.1:7071/api/ui/data{endpoint_path}", ui_api.SERVICE_ROOT,
                                  b"", {"host": "127.0.0.1:7071"})
    response = dispatch(ui_api.ENDPOINTS, request, lambda: services, lambda: Access.from_settings(settings))
    return response.status, response.body


def test_without_a_bus_the_page_is_told_to_poll():
    services, group_id = memory_services(), new_slugid()
    status, body = call(f"/task-group/{group_id}/feed", "POST", services)
    assert status == 200 and body == {"taskGroupId": group_id, "live": False, "reason": "no event bus is configured"}
    status, body = call(f"/task-group/{group_id}/feed/{'a' * 22}", "GET", services)
    assert status == 404 and body["code"] == "ResourceNotFound"


def test_the_feeds_ask_what_listtaskgroup_asks():
    services, group_id = memory_services(), new_slugid()
    for path, method in [(f"/task-group/{group_id}/feed", "POST"), (f"/task-group/{group_id}/feed/{'a' * 22}", "GET")]:
        status, body = call(path, method, services, anonymous_scopes="[]")
        assert status == 403 and body["code"] == "InsufficientScopes"
        assert f"queue:list-task-group:{group_id}" in body["message"]


def test_a_bus_that_cannot_be_reached_is_polling_then_503_without_its_address():
    port = free_port()
    services, group_id = memory_services(feeds=AmqpFeeds(f"amqp://guest:guest@127.0.0.1:{port}/%2F")), new_slugid()
    status, body = call(f"/task-group/{group_id}/feed", "POST", services)
    assert status == 200 and body["live"] is False and body["reason"] == "the event bus is unreachable"
    status, body = call(f"/task-group/{group_id}/feed/{'a' * 22}", "GET", services)
    assert status == 503 and body["code"] == "ServiceUnavailable" and str(port) not in body["message"]
