"""The whole life of a task through the official Taskcluster client against the local host."""

from datetime import timedelta

import pytest
import requests
import taskcluster

from shared import __version__
from shared.validation import check_response
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from tests.conftest import eventually


def conforms(schema: str, body: dict) -> dict:
    assert check_response(schema, body) == []
    return body


def claim_one(queue, task_queue_id: str, **body) -> dict:
    request = {"workerGroup": "wg", "workerId": "w1", "tasks": 1, **body}
    claims = conforms("claim-work-response", queue.claimWork(task_queue_id, request))["tasks"]
    assert len(claims) == 1
    return claims[0]


def test_ping(queue):
    assert queue.ping()["alive"] is True


def test_monitoring_endpoints(queue):
    assert queue.version()["version"] == __version__ and set(queue.version()) == {"source", "version",
                                                                                 "commit", "build"}
    assert queue.lbheartbeat() == {} and queue.heartbeat() == {}


def test_create_claim_complete(queue, new_task, task_id, task_queue_id):
    definition = new_task()
    status = conforms("task-status-response", queue.createTask(task_id, definition))["status"]
    assert status["state"] == "pending" and status["taskQueueId"] == task_queue_id
    assert status["runs"] == [{"runId": 0, "state": "pending", "reasonCreated": "scheduled",
                               "scheduled": status["runs"][0]["scheduled"]}]

    claim = claim_one(queue, task_queue_id)
    assert claim["status"]["taskId"] == task_id and claim["runId"] == 0
    assert claim["task"]["payload"] == definition["payload"]
    assert claim["status"]["runs"][0]["state"] == "running"
    assert claim["status"]["runs"][0]["workerId"] == "w1"
    taken_until = parse_iso(claim["takenUntil"])
    assert timedelta(minutes=19) < taken_until - utcnow() <= timedelta(minutes=20)
    assert set(claim["credentials"]) == {"clientId", "accessToken", "certificate"}

    done = conforms("task-status-response", queue.reportCompleted(task_id, "0"))["status"]
    assert done["state"] == "completed" and done["runs"][0]["reasonResolved"] == "completed"
    assert conforms("task-status-response", queue.status(task_id))["status"] == done


def test_get_task_returns_the_definition_with_defaults(queue, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    task = conforms("task", queue.task(task_id))
    provisioner_id, worker_type = task_queue_id.split("/")
    assert (task["provisionerId"], task["workerType"]) == (provisioner_id, worker_type)
    assert task["taskGroupId"] == task_id and task["schedulerId"] == "-"
    assert task["priority"] == "lowest" and task["retries"] == 5 and task["requires"] == "all-completed"
    assert parse_iso(task["expires"]) - parse_iso(task["deadline"]) == timedelta(days=365)


def test_provisioner_and_worker_type_form(queue, new_task, task_id, task_queue_id):
    provisioner_id, worker_type = task_queue_id.split("/")
    definition = new_task(provisionerId=provisioner_id, workerType=worker_type)
    del definition["taskQueueId"]
    assert queue.createTask(task_id, definition)["status"]["taskQueueId"] == task_queue_id
    assert claim_one(queue, task_queue_id)["status"]["taskId"] == task_id


def test_create_is_idempotent_and_conflicts_on_a_different_definition(queue, new_task, task_id):
    definition = new_task()
    first = queue.createTask(task_id, definition)
    assert queue.createTask(task_id, definition) == first
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.createTask(task_id, {**definition, "retries": 1})
    assert error.value.status_code == 409
    assert error.value.body["code"] == "RequestConflict"


def test_failed_and_exception_reports(queue, new_task, task_queue_id):
    failing, broken = new_slugid(), new_slugid()
    queue.createTask(failing, new_task())
    queue.createTask(broken, new_task())
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 2})["tasks"]
    assert {claim["status"]["taskId"] for claim in claims} == {failing, broken}
    assert queue.reportFailed(failing, "0")["status"]["state"] == "failed"
    status = queue.reportException(broken, "0", {"reason": "malformed-payload"})["status"]
    assert status["state"] == "exception" and status["runs"][0]["reasonResolved"] == "malformed-payload"
    assert len(status["runs"]) == 1


@pytest.mark.parametrize("reason, created", [("worker-shutdown", "retry"), ("intermittent-task", "task-retry")])
def test_retryable_exception_starts_a_new_run(queue, new_task, task_id, task_queue_id, reason, created):
    queue.createTask(task_id, new_task(retries=1))
    claim_one(queue, task_queue_id)
    status = queue.reportException(task_id, "0", {"reason": reason})["status"]
    assert [run["state"] for run in status["runs"]] == ["exception", "pending"]
    assert status["runs"][1]["reasonCreated"] == created and status["retriesLeft"] == 0
    assert claim_one(queue, task_queue_id)["runId"] == 1
    status = queue.reportException(task_id, "1", {"reason": reason})["status"]
    assert status["state"] == "exception" and len(status["runs"]) == 2


def test_reclaim_extends_the_claim(queue, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    claim = claim_one(queue, task_queue_id)
    reclaimed = conforms("task-reclaim-response", queue.reclaimTask(task_id, "0"))
    assert reclaimed["takenUntil"] >= claim["takenUntil"]
    assert reclaimed["status"]["runs"][0]["takenUntil"] == reclaimed["takenUntil"]
    queue.reportCompleted(task_id, "0")
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.reclaimTask(task_id, "0")
    assert error.value.status_code == 409


def test_cancel_pending_and_running_and_unknown(queue, new_task, task_queue_id):
    pending, running = new_slugid(), new_slugid()
    queue.createTask(pending, new_task(priority="low"))
    queue.createTask(running, new_task(priority="high"))
    assert claim_one(queue, task_queue_id)["status"]["taskId"] == running
    for task_id in (pending, running):
        status = queue.cancelTask(task_id)["status"]
        assert status["state"] == "exception" and status["runs"][-1]["reasonResolved"] == "canceled"
        assert queue.cancelTask(task_id)["status"] == status
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.reportCompleted(running, "0")
    assert error.value.status_code == 409
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 1})["tasks"] == []


def test_schedule_is_idempotent_and_rerun_adds_a_run(queue, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task(retries=0))
    assert len(queue.scheduleTask(task_id)["status"]["runs"]) == 1
    claim_one(queue, task_queue_id)
    queue.reportFailed(task_id, "0")
    status = queue.rerunTask(task_id)["status"]
    assert status["state"] == "pending" and status["runs"][1]["reasonCreated"] == "rerun"
    assert queue.rerunTask(task_id)["status"] == status
    assert claim_one(queue, task_queue_id)["runId"] == 1


def test_claim_order_is_priority_then_age(queue, new_task, task_queue_id):
    created = []
    for priority in ("low", "highest", "low", "medium", "lowest", "very-high"):
        task_id = new_slugid()
        queue.createTask(task_id, new_task(priority=priority))
        created.append((priority, task_id))
    rank = ["highest", "very-high", "high", "medium", "low", "very-low", "lowest"]
    expected = [task_id for _, task_id in sorted(created, key=lambda item: rank.index(item[0]))]
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 6})["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == expected


def test_priority_normal_is_refused_as_by_taskcluster(queue, new_task, task_id):
    """Taskcluster's schema no longer knows the old name `normal` (v106 answers 400)."""
    with pytest.raises(taskcluster.TaskclusterRestFailure) as refused:
        queue.createTask(task_id, new_task(priority="normal"))
    assert (refused.value.status_code, refused.value.body["code"]) == (400, "InputValidationError")
    assert "priority" in refused.value.body["message"]
    with pytest.raises(taskcluster.TaskclusterRestFailure) as missing:
        queue.status(task_id)
    assert missing.value.status_code == 404


def test_claim_work_answers_empty_after_the_long_poll(queue, task_queue_id):
    started = utcnow()
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 1}) == {"tasks": []}
    assert utcnow() - started >= timedelta(seconds=1.5)


def test_claim_work_wakes_as_soon_as_work_appears(server, new_task, task_id, task_queue_id):
    import threading
    slow = server.client()
    result = {}

    def wait_for_work():
        result["claims"] = slow.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 1})
    waiter = threading.Thread(target=wait_for_work)
    waiter.start()
    server.client().createTask(task_id, new_task())
    waiter.join(timeout=10)
    assert [claim["status"]["taskId"] for claim in result["claims"]["tasks"]] == [task_id]


def test_task_queue_ids_with_a_slash_travel_encoded(queue, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    counts = conforms("task-queue-counts-response", queue.taskQueueCounts(task_queue_id))
    assert counts["pendingTasks"] == 1 and counts["claimedTasks"] == 0
    pending = conforms("pending-tasks-response", queue.pendingTasks(task_queue_id))
    assert pending["pendingTasks"] == 1 and pending["provisionerId"] == task_queue_id.split("/")[0]
    claim_one(queue, task_queue_id)
    counts = queue.taskQueueCounts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (0, 1)
    queue.reportCompleted(task_id, "0")
    # The claimed run's row goes once the group has counted the resolution, after the answer.
    eventually(lambda: queue.taskQueueCounts(task_queue_id)["claimedTasks"] == 0, message="no claimed task counted")


def test_task_queue_ids_may_also_travel_with_their_slash_as_it_is(server, queue, new_task, task_id, task_queue_id):
    """Where Taskcluster's route declares `{*taskQueueId}`; getTaskQueue's takes one segment."""
    queue.createTask(task_id, new_task())
    counts = requests.get(server.url(f"/task-queues/{task_queue_id}/counts"), auth=server.auth, timeout=10)
    assert counts.json() == queue.taskQueueCounts(task_queue_id)
    pending = requests.get(server.url(f"/pending/{task_queue_id}"), auth=server.auth, timeout=10)
    assert pending.json()["pendingTasks"] == 1
    listed = requests.get(server.url(f"/task-queues/{task_queue_id}/pending"), auth=server.auth, timeout=10)
    assert [entry["taskId"] for entry in listed.json()["tasks"]] == [task_id]
    claimed = requests.post(server.url(f"/claim-work/{task_queue_id}"), auth=server.auth, timeout=10,
                            json={"workerGroup": "wg", "workerId": "w", "tasks": 1})
    assert [claim["status"]["taskId"] for claim in claimed.json()["tasks"]] == [task_id]
    assert requests.get(server.url(f"/task-queues/{task_queue_id}"), auth=server.auth, timeout=10).status_code == 404


def test_task_queues_are_listed_and_got(queue, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    task_queue = conforms("taskqueue-response", queue.getTaskQueue(task_queue_id))
    assert task_queue["taskQueueId"] == task_queue_id
    seen, token = [], None
    while True:
        page = conforms("list-taskqueues-response",
                        queue.listTaskQueues(query={"limit": 2, **({"continuationToken": token} if token else {})}))
        seen += [entry["taskQueueId"] for entry in page["taskQueues"]]
        token = page.get("continuationToken")
        if not token:
            break
    assert task_queue_id in seen and len(seen) == len(set(seen))


def test_task_group_is_listed_in_pages(queue, new_task):
    group_id = new_slugid()
    members = {new_slugid() for _ in range(5)}
    for task_id in members:
        queue.createTask(task_id, new_task(taskGroupId=group_id))
    group = conforms("task-group-response", queue.getTaskGroup(group_id))
    assert group["taskGroupId"] == group_id and group["schedulerId"] == "-" and "sealed" not in group
    seen, token, pages = [], None, 0
    while True:
        query = {"limit": 2, **({"continuationToken": token} if token else {})}
        page = conforms("list-task-group-response", queue.listTaskGroup(group_id, query=query))
        seen += [entry["status"]["taskId"] for entry in page["tasks"]]
        assert all(entry["task"]["taskGroupId"] == group_id for entry in page["tasks"])
        pages += 1
        token = page.get("continuationToken")
        if not token:
            break
    assert set(seen) == members and len(seen) == 5 and pages == 3


def test_task_group_expiry_follows_its_latest_task(queue, new_task):
    """An hour past it, as Taskcluster's queue keeps it: a task expiring within that hour
    writes no group row."""
    group_id = new_slugid()
    deadline = utcnow() + timedelta(hours=1)
    for days in (10, 30, 20):
        queue.createTask(new_slugid(), new_task(taskGroupId=group_id, deadline=to_iso(deadline),
                                                expires=to_iso(deadline + timedelta(days=days))))
    assert parse_iso(queue.getTaskGroup(group_id)["expires"]) == \
        parse_iso(to_iso(deadline + timedelta(days=30, hours=1)))


def test_a_group_keeps_the_scheduler_id_of_its_first_task(queue, new_task):
    group_id = new_slugid()
    queue.createTask(new_slugid(), new_task(taskGroupId=group_id, schedulerId="first"))
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.createTask(new_slugid(), new_task(taskGroupId=group_id, schedulerId="second"))
    assert error.value.status_code == 409
