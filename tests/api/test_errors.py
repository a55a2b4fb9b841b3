"""Bad input gets Taskcluster's error shape and a 4xx, never a 500, and changes nothing."""

import json
from datetime import timedelta

import pytest
import requests
import taskcluster

from shared.validation import check_response
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow


def rest_error(call, *args) -> taskcluster.TaskclusterRestFailure:
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        call(*args)
    assert check_response("error", caught.value.body) == []
    return caught.value


def assert_not_created(queue, task_id):
    assert rest_error(queue.status, task_id).status_code == 404


@pytest.mark.parametrize("change, field", [
    ({"retries": "five"}, "retries"),
    ({"retries": 50}, "retries"),
    ({"priority": "urgent"}, "priority"),
    ({"routes": ["x" * 250]}, "routes"),
    ({"taskQueueId": "no-slash"}, "taskQueueId"),
    ({"dependencies": ["not-a-slug"]}, "dependencies"),
    ({"metadata": {"name": "n", "description": "d", "owner": "o", "source": "ftp://x"}}, "metadata.source"),
    ({"unexpected": 1}, "unexpected"),
    ({"deadline": "tomorrow"}, "deadline"),
    ({"scopes": ["bad\u00e9scope"]}, "scopes"),
])
def test_schema_violations_name_the_field(queue, new_task, task_id, change, field):
    error = rest_error(queue.createTask, task_id, {**new_task(), **change})
    assert error.status_code == 400 and error.body["code"] == "InputValidationError"
    assert field in error.body["message"]
    assert_not_created(queue, task_id)


def test_missing_required_fields_are_named(queue, new_task, task_id):
    definition = new_task()
    del definition["metadata"]
    error = rest_error(queue.createTask, task_id, definition)
    assert error.status_code == 400 and "metadata" in error.body["message"]


@pytest.mark.parametrize("change, field", [
    (lambda now: {"deadline": to_iso(now - timedelta(minutes=1))}, "deadline"),
    (lambda now: {"deadline": to_iso(now + timedelta(days=6))}, "deadline"),
    (lambda now: {"created": to_iso(now + timedelta(hours=1)), "deadline": to_iso(now + timedelta(hours=2))},
     "created"),
    (lambda now: {"deadline": to_iso(now + timedelta(hours=1)), "expires": to_iso(now + timedelta(minutes=30))},
     "expires"),
    (lambda now: {"created": to_iso(now - timedelta(hours=1))}, "created"),
])
def test_time_rules(queue, new_task, task_id, change, field):
    error = rest_error(queue.createTask, task_id, {**new_task(), **change(utcnow())})
    assert error.status_code == 400 and field in error.body["message"]
    assert_not_created(queue, task_id)


def test_a_scope_ending_in_two_stars_is_refused(queue, new_task, task_id):
    error = rest_error(queue.createTask, task_id, new_task(scopes=["queue:get-artifact:*", "queue:**"]))
    assert error.status_code == 400 and "scopes[1]" in error.body["message"]
    assert_not_created(queue, task_id)


def test_inconsistent_queue_forms(queue, new_task, task_id):
    error = rest_error(queue.createTask, task_id, new_task(provisionerId="other", workerType="kind"))
    assert error.status_code == 400 and "taskQueueId" in error.body["message"]


def test_bad_task_id_in_the_url(queue, new_task):
    error = rest_error(queue.createTask, "not-a-slugid", new_task())
    assert error.status_code == 400 and "taskId" in error.body["message"]


def test_unknown_task_and_run(queue, new_task, task_id, task_queue_id):
    for call in (queue.task, queue.status, queue.cancelTask, queue.rerunTask, queue.scheduleTask):
        error = rest_error(call, new_slugid())
        assert error.status_code == 404 and error.body["code"] == "ResourceNotFound"
    queue.createTask(task_id, new_task())
    for run_id in ("1", "7"):
        assert rest_error(queue.reportCompleted, task_id, run_id).status_code == 404
    assert rest_error(queue.reportCompleted, task_id, "0").status_code == 409  # pending, not running
    assert rest_error(queue.reclaimTask, task_id, "0").status_code == 409
    assert queue.status(task_id)["status"]["state"] == "pending"


def test_bad_exception_reason(queue, new_task, task_id):
    queue.createTask(task_id, new_task())
    error = rest_error(queue.reportException, task_id, "0", {"reason": "claim-expired"})
    assert error.status_code == 400 and "reason" in error.body["message"]


@pytest.mark.parametrize("body, field", [
    ({"workerGroup": "wg", "workerId": "w", "tasks": 0}, "tasks"),
    ({"workerGroup": "wg", "workerId": "w", "tasks": 33}, "tasks"),
    ({"workerGroup": "w g", "workerId": "w", "tasks": 1}, "workerGroup"),
    ({"workerId": "w", "tasks": 1}, "workerGroup"),
])
def test_claim_work_input(queue, task_queue_id, body, field):
    error = rest_error(queue.claimWork, task_queue_id, body)
    assert error.status_code == 400 and field in error.body["message"]


def test_bad_task_queue_id(queue):
    error = rest_error(queue.claimWork, "Not/Valid", {"workerGroup": "wg", "workerId": "w", "tasks": 1})
    assert error.status_code == 400 and "taskQueueId" in error.body["message"]


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2", b"\xff\xfe", b'"just a string"', b"[]", b"null"])
def test_malformed_bodies_are_4xx(server, task_id, body):
    response = requests.put(server.url(f"/task/{task_id}"), data=body,
                            headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500
    assert {"code", "message", "requestInfo"} <= set(response.json())
    assert requests.get(server.url(f"/task/{task_id}/status")).status_code == 404


def test_json_that_python_would_accept_but_json_does_not(server, new_task, task_id):
    """NaN, Infinity and numbers beyond a double would be stored and echoed back as text no
    strict JSON parser reads; nesting deep enough to exhaust recursion must not be a 500."""
    valid = json.dumps(new_task())[:-1]
    deep = "[" * 5000 + "]" * 5000
    for extra in ("NaN", "Infinity", "-Infinity", "1e400", deep, '{"a":' * 150 + "1" + "}" * 150):
        response = requests.put(server.url(f"/task/{task_id}"), data=f'{valid}, "extra": {{"x": {extra}}}}}')
        assert response.status_code == 400, (extra[:20], response.text[:300])
        assert response.json()["code"] == "MalformedPayload"
    response = requests.put(server.url(f"/task/{task_id}"), data="[" * 5000 + "]" * 5000)
    assert response.status_code == 400
    assert requests.get(server.url(f"/task/{task_id}/status")).status_code == 404
    nested = '{"a":' * 50 + "1" + "}" * 50   # deep, but within reason
    response = requests.put(server.url(f"/task/{task_id}"), data=f'{valid}, "extra": {{"x": {nested}}}}}')
    assert response.status_code == 200, response.text[:300]


def test_oversize_body(server, new_task, task_id):
    definition = new_task(payload={"blob": "x" * (11 * 1024 * 1024)})
    response = requests.put(server.url(f"/task/{task_id}"), data=json.dumps(definition))
    assert response.status_code == 413 and response.json()["code"] == "PayloadTooLarge"


def test_definition_too_large_for_one_row(server, new_task, task_id):
    definition = new_task(payload={"blob": "x" * 500_000})
    response = requests.put(server.url(f"/task/{task_id}"), data=json.dumps(definition))
    assert response.status_code == 400 and "definition" in response.json()["message"]


def test_unknown_endpoint_and_bad_query(server, task_id):
    response = requests.get(server.url("/no/such/thing"))
    assert response.status_code == 404 and response.json()["code"] == "ResourceNotFound"
    response = requests.get(server.url(f"/task-group/{task_id}/list"), params={"limit": "many"})
    assert response.status_code == 400 and "limit" in response.json()["message"]
    response = requests.get(server.url(f"/task-group/{task_id}/list"), params={"continuationToken": "%%%"})
    assert response.status_code in (400, 404)


def test_unknown_task_group_and_queue(queue):
    assert rest_error(queue.getTaskGroup, new_slugid()).status_code == 404
    assert rest_error(queue.listTaskGroup, new_slugid()).status_code == 404
    assert rest_error(queue.getTaskQueue, "nobody/nothing").status_code == 404
