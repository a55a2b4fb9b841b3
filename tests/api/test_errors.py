"""Bad input gets Taskcluster's error shape and a 4xx, never a 500, and changes nothing."""

import json
import socket
from datetime import timedelta

import mohawk
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
    """Rules between fields, which no schema says: Taskcluster's InputError."""
    error = rest_error(queue.createTask, task_id, {**new_task(), **change(utcnow())})
    assert (error.status_code, error.body["code"]) == (400, "InputError") and field in error.body["message"]
    assert_not_created(queue, task_id)


def test_a_scope_ending_in_two_stars_is_refused(queue, new_task, task_id):
    error = rest_error(queue.createTask, task_id, new_task(scopes=["queue:get-artifact:*", "queue:**"]))
    assert (error.status_code, error.body["code"]) == (400, "InputError") and "scopes[1]" in error.body["message"]
    assert_not_created(queue, task_id)


def test_inconsistent_queue_forms(queue, new_task, task_id):
    error = rest_error(queue.createTask, task_id, new_task(provisionerId="other", workerType="kind"))
    assert (error.status_code, error.body["code"]) == (400, "InputError") and "taskQueueId" in error.body["message"]


def test_bad_task_id_in_the_url(queue, new_task):
    error = rest_error(queue.createTask, "not-a-slugid", new_task())
    assert error.status_code == 400 and error.body["code"] == "InvalidRequestArguments"
    assert error.body["message"].startswith("taskId: 'not-a-slugid' is not a slugid: 22 characters")
    run = rest_error(queue.reportCompleted, new_slugid(), "first")
    assert run.status_code == 400 and run.body["message"].startswith("runId: 'first' is not a run number")


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
    assert (error.status_code, error.body["code"]) == (400, "InputValidationError") and "reason" in error.body["message"]


def test_no_body_where_a_call_takes_one_is_a_malformed_payload(server, new_task, task_id):
    """Taskcluster's body parser answers MalformedPayload to a call that takes JSON and got none."""
    response = requests.post(server.url(f"/task/{task_id}/runs/0/exception"), auth=server.auth)
    assert response.status_code == 400 and response.json()["code"] == "MalformedPayload"
    # An empty body that says it is JSON is {}, as Taskcluster reads it: its schema names what is missing.
    response = requests.put(server.url(f"/task/{task_id}"), data=b"", auth=server.auth,
                            headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["code"] == "InputValidationError"


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
                            headers={"Content-Type": "application/json"}, auth=server.auth)
    assert 400 <= response.status_code < 500
    assert {"code", "message", "requestInfo"} <= set(response.json())
    assert requests.get(server.url(f"/task/{task_id}/status"), auth=server.auth).status_code == 404


def test_json_that_python_would_accept_but_json_does_not(server, new_task, task_id):
    """NaN, Infinity and numbers beyond a double would be stored and echoed back as text no
    strict JSON parser reads; nesting deep enough to exhaust recursion must not be a 500."""
    valid = json.dumps(new_task())[:-1]
    deep = "[" * 5000 + "]" * 5000
    for extra in ("NaN", "Infinity", "-Infinity", "1e400", deep, '{"a":' * 150 + "1" + "}" * 150):
        response = requests.put(server.url(f"/task/{task_id}"), data=f'{valid}, "extra": {{"x": {extra}}}}}',
                                auth=server.auth)
        assert response.status_code == 400, (extra[:20], response.text[:300])
        assert response.json()["code"] == "MalformedPayload"
    response = requests.put(server.url(f"/task/{task_id}"), data="[" * 5000 + "]" * 5000, auth=server.auth)
    assert response.status_code == 400
    assert requests.get(server.url(f"/task/{task_id}/status"), auth=server.auth).status_code == 404
    nested = '{"a":' * 50 + "1" + "}" * 50   # deep, but within reason
    response = requests.put(server.url(f"/task/{task_id}"), data=f'{valid}, "extra": {{"x": {nested}}}}}',
                            auth=server.auth)
    assert response.status_code == 200, response.text[:300]


def test_oversize_body(server, new_task, task_id):
    definition = new_task(payload={"blob": "x" * (11 * 1024 * 1024)})
    response = requests.put(server.url(f"/task/{task_id}"), data=json.dumps(definition), auth=server.auth)
    assert response.status_code == 413 and response.json()["code"] == "PayloadTooLarge"


def test_definition_too_large_for_one_row(server, new_task, task_id):
    definition = new_task(payload={"blob": "x" * 500_000})
    response = requests.put(server.url(f"/task/{task_id}"), data=json.dumps(definition), auth=server.auth)
    assert response.status_code == 400 and "definition" in response.json()["message"]


def test_unknown_endpoint_and_bad_query(server, task_id):
    response = requests.get(server.url("/no/such/thing"), auth=server.auth)
    assert response.status_code == 404 and response.json()["code"] == "ResourceNotFound"
    response = requests.get(server.url(f"/task-group/{task_id}/list"), params={"limit": "many"}, auth=server.auth)
    assert response.status_code == 400 and "limit" in response.json()["message"]
    response = requests.get(server.url(f"/task-group/{task_id}/list"), params={"continuationToken": "%%%"},
                            auth=server.auth)
    assert response.status_code in (400, 404)


def test_unknown_task_group_and_queue(queue):
    assert rest_error(queue.getTaskGroup, new_slugid()).status_code == 404
    assert rest_error(queue.listTaskGroup, new_slugid()).status_code == 404
    assert rest_error(queue.getTaskQueue, "nobody/nothing").status_code == 404


# Issue R5: no input may produce a 5xx. Each case below was a 500 (or was stored) before.

def scheduler_url(server, path: str) -> str:
    return f"{server.root_url}/api/scheduler/v1{path}"


def assert_refused(response, field: str, status: int = 400) -> dict:
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert check_response("error", body) == [] and field in body["message"], body["message"]
    return body


@pytest.mark.parametrize("change, field", [
    (lambda: {"taskGroupId": new_slugid() + "\n"}, "taskGroupId"),
    (lambda: {"schedulerId": "scheduler\n"}, "schedulerId"),
    (lambda: {"dependencies": [new_slugid() + "\n"]}, "dependencies"),
    (lambda: {"taskQueueId": "prov/worker\n"}, "taskQueueId"),
    (lambda: {"taskQueueId": None, "provisionerId": "prov\n", "workerType": "worker"}, "provisionerId"),
    (lambda: {"taskQueueId": None, "provisionerId": "prov", "workerType": "worker\n"}, "workerType"),
])
def test_a_final_newline_does_not_pass_a_pattern(queue, new_task, task_id, change, field):
    """Python's `$` matches before a final newline; the schemas' (ECMA-262) `$` does not."""
    definition = {key: value for key, value in {**new_task(), **change()}.items() if value is not None}
    error = rest_error(queue.createTask, task_id, definition)
    assert error.status_code == 400 and field in error.body["message"]
    assert_not_created(queue, task_id)


@pytest.mark.parametrize("method, path, field", [
    ("PUT", "/task/{task_id}%0A", "taskId"),
    ("GET", "/task-group/{task_id}%0A", "taskGroupId"),
    ("POST", "/claim-work/prov%2Fworker%0A", "taskQueueId"),
    ("GET", "/task-queues/prov%2Fworker%0A/counts", "taskQueueId"),
    ("GET", "/provisioners/prov%0A/worker-types/worker/workers", "provisionerId"),
    ("GET", "/provisioners/prov/worker-types/worker%0A/workers", "workerType"),
    ("GET", "/provisioners/prov/worker-types/worker/workers/wg%0A/w", "workerGroup"),
    ("GET", "/provisioners/prov/worker-types/worker/workers/wg/w%0A", "workerId"),
    ("POST", "/task/{task_id}/runs/10000/completed", "runId"),
])
def test_a_final_newline_does_not_pass_a_route_parameter(server, new_task, task_id, method, path, field):
    body = {"workerGroup": "wg", "workerId": "w"} if path.startswith("/claim-work") else new_task()
    response = requests.request(method, server.url(path.format(task_id=task_id)), json=body, auth=server.auth)
    assert_refused(response, field)
    assert requests.get(server.url(f"/task/{task_id}/status"), auth=server.auth).status_code == 404


@pytest.mark.parametrize("body, field", [
    ({"workerGroup": "wg\n", "workerId": "w"}, "workerGroup"),
    ({"workerGroup": "wg", "workerId": "w\n"}, "workerId"),
])
def test_claim_work_identifiers_end_without_newline(queue, task_queue_id, body, field):
    error = rest_error(queue.claimWork, task_queue_id, body)
    assert error.status_code == 400 and field in error.body["message"]


@pytest.mark.parametrize("label, routing, field", [("build\n", "", "tasks"), ("build", "route\n", "routing")])
def test_a_refused_graph_is_refused_before_anything_is_written(server, new_task, label, routing, field):
    graph_id = new_slugid()
    graph = {"tasks": {label: {"task": new_task()}}, "routing": routing}
    assert_refused(requests.put(scheduler_url(server, f"/task-graph/{graph_id}"), json=graph, auth=server.auth), field)
    assert requests.get(scheduler_url(server, f"/task-graph/{graph_id}/status"), auth=server.auth).status_code == 404


@pytest.mark.parametrize("change, field, code", [
    ({"created": "0001-01-01T00:00:00+01:00"}, "created", "InputValidationError"),     # year 0 in UTC
    ({"deadline": "9999-12-31T23:59:59-01:00"}, "deadline", "InputValidationError"),   # year 10000 in UTC
    ({"expires": "9999-12-31T23:59:59-01:00"}, "expires", "InputValidationError"),
    ({"deadline": "9999-12-31T23:59:59Z"}, "deadline", "InputError"),   # its default expires, a year on
    ({"deadline": "0999-12-31T23:59:59Z"}, "deadline", "InputError"),   # written back as year 999
    ({"created": "2026-W48-1T00:00:00Z"}, "created", "InputValidationError"),   # ISO 8601, not RFC 3339
])
def test_dates_at_the_edges(queue, new_task, task_id, change, field, code):
    """A date no schema reads is InputValidationError; one that breaks a rule between the
    dates (in the past, too far ahead) Taskcluster's InputError."""
    error = rest_error(queue.createTask, task_id, new_task(**change))
    assert error.status_code == 400 and error.body["code"] == code
    assert error.body["message"].startswith(field)
    assert_not_created(queue, task_id)


def test_quarantine_at_the_edges(queue, new_task, task_queue_id):
    provisioner_id, worker_type = task_queue_id.split("/")
    worker = (provisioner_id, worker_type, "wg", "w1")
    for until in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        error = rest_error(queue.quarantineWorker, *worker, {"quarantineUntil": until})
        assert error.status_code == 400 and "quarantineUntil" in error.body["message"]
    queue.createTask(new_slugid(), new_task())
    queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    # A year below 1000 is written with four digits, so it can be read back.
    queue.quarantineWorker(*worker, {"quarantineUntil": "0001-01-01T00:00:00Z"})
    assert queue.getWorker(*worker)["quarantineUntil"] == "0001-01-01T00:00:00.000Z"


@pytest.mark.parametrize("limit", ["\u00b2", "\u0663", "-1", "1.5", " 1"])
def test_limit_is_ascii_digits(server, limit):
    """'²' and '٣' pass str.isdigit(); int() refuses the first and reads the second as 3."""
    assert_refused(requests.get(server.url("/task-queues"), params={"limit": limit}, auth=server.auth), "limit")


def test_paging_is_as_lenient_as_taskclusters(queue, new_task, task_id):
    """Taskcluster's queue answers limit=0 with an empty page, and a token it cannot read
    with the first page, unless the token holds characters no token has (400 InputError)."""
    group_id = new_slugid()
    members = sorted([task_id, new_slugid()])
    for member in members:
        queue.createTask(member, new_task(taskGroupId=group_id))
    empty = queue.listTaskGroup(group_id, query={"limit": "0"})
    assert empty["tasks"] == [] and empty["taskGroupId"] == group_id and "continuationToken" not in empty
    assert queue.listTaskQueues(query={"limit": "0"}) == {"taskQueues": []}
    for token in ("garbage", "_-_-"):
        page = queue.listTaskGroup(group_id, query={"continuationToken": token})
        assert sorted(entry["status"]["taskId"] for entry in page["tasks"]) == members
    assert len(queue.statuses(payload={"taskIds": members}, query={"continuationToken": "garbage"})["statuses"]) == 2
    error = rest_error(lambda: queue.listTaskGroup(group_id, query={"continuationToken": "not/a token!"}))
    assert (error.status_code, error.body["code"]) == (400, "InputError")
    assert "Invalid continuation token" in error.body["message"]


def test_a_limit_beyond_any_page_is_clamped(server):
    """int() refuses more than 4,300 digits; no page is that long anyway."""
    for limit in ("9" * 5000, "0" * 5000 + "1", "1001"):
        response = requests.get(server.url("/task-queues"), params={"limit": limit}, auth=server.auth)
        assert response.status_code == 200, response.text[:300]


def test_a_whole_float_counts_as_an_integer(queue, new_task, task_queue_id):
    """JSON Schema (and JavaScript) take 2.0 for the integer 2; so does the body's parser."""
    queue.createTask(new_slugid(), new_task(retries=2.0))
    claimed = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 2.0})["tasks"]
    assert len(claimed) == 1 and claimed[0]["task"]["retries"] == 2


@pytest.mark.parametrize("path", [b"/task/%ZZ/status", b"/task/%00/status", b"/task/\xff\xfe/status",
                                  b"/task-queues/prov%2F%FF", b"/task-queues?limit=%B2", b"/%ZZ"])
def test_odd_bytes_in_the_path(server, path):
    status, body = raw_get(server, b"/api/queue/v1" + path)
    assert status in (400, 404) and check_response("error", json.loads(body)) == []


def raw_get(server, path: bytes) -> tuple[int, bytes]:
    """GET a path as given, byte for byte (HTTP clients would encode it first), signed by
    the root client (so that the path's checks are reached)."""
    host, port = server.root_url.removeprefix("http://").split(":")
    signed = mohawk.Sender({"id": server.credentials["clientId"], "key": server.credentials["accessToken"],
                            "algorithm": "sha256"}, server.root_url + path.decode("latin-1"), "GET",
                           content=b"", content_type="")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: " + f"{host}:{port}".encode()
                     + b"\r\nConnection: close\r\nAuthorization: "
                     + signed.request_header.encode() + b"\r\n\r\n")
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body
