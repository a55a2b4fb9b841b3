"""changeTaskPriority and changeTaskGroupPriority through the official client and a real host:
the new place of a pending run, the refusals, the scopes, the events, and a race of changes
against claimWork in which no run is claimed twice and none is lost."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.validation import check_response
from tests.api.conftest import refusal, temporary
from tests.events.amqp_consumer import Consumer
from tests.reference import schema_errors

WORKER = {"workerGroup": "wg", "workerId": "w1"}


def claimed_ids(queue, task_queue_id: str, count: int) -> list[str]:
    answer = queue.claimWork(task_queue_id, {**WORKER, "tasks": count})
    return [claim["status"]["taskId"] for claim in answer["tasks"]]


def test_a_pending_run_is_claimed_at_its_new_priority(queue, new_task, task_queue_id):
    low, medium, high = new_slugid(), new_slugid(), new_slugid()
    for task_id, priority in ((low, "lowest"), (medium, "medium"), (high, "high")):
        queue.createTask(task_id, new_task(priority=priority))
    answer = queue.changeTaskPriority(low, {"newPriority": "highest"})
    assert check_response("task-status-response", answer) == []
    assert schema_errors("task-status-response", answer) == []
    assert answer["status"]["priority"] == "highest" and answer["status"]["state"] == "pending"
    assert queue.task(low)["priority"] == "highest"
    assert queue.status(low)["status"]["priority"] == "highest"
    listed = queue.listPendingTasks(task_queue_id)["tasks"]
    assert [entry["taskId"] for entry in listed] == [low, high, medium]

    queue.changeTaskPriority(high, {"newPriority": "very-low"})     # down, behind medium
    assert claimed_ids(queue, task_queue_id, 1) == [low]
    claims = queue.claimWork(task_queue_id, {**WORKER, "tasks": 2})["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [medium, high]
    assert claims[1]["task"]["priority"] == "very-low"


def test_refusals_name_what_is_wrong(queue, new_task, task_queue_id):
    task_id = new_slugid()
    queue.createTask(task_id, new_task(priority="low"))
    status, body = refusal(queue.changeTaskPriority, task_id, {"newPriority": "urgent"})
    assert status == 400 and "newPriority" in body["message"]
    status, body = refusal(queue.changeTaskPriority, task_id, {"newPriority": "low"})
    assert status == 409 and "low" in body["message"]
    status, body = refusal(queue.changeTaskPriority, new_slugid(), {"newPriority": "high"})
    assert status == 404 and body["code"] == "ResourceNotFound"
    assert claimed_ids(queue, task_queue_id, 1) == [task_id]
    queue.reportCompleted(task_id, "0")
    status, body = refusal(queue.changeTaskPriority, task_id, {"newPriority": "high"})
    assert status == 409 and "resolved" in body["message"]


def test_past_its_deadline_a_task_keeps_its_priority(queue, new_task):
    task_id = new_slugid()
    deadline = taskcluster.fromNowJSON("2 seconds")
    queue.createTask(task_id, new_task(deadline=deadline))
    time.sleep(2.5)
    status, body = refusal(queue.changeTaskPriority, task_id, {"newPriority": "high"})
    assert status == 409 and "deadline" in body["message"]


def test_the_scopes_are_taskclusters(server, new_task, task_queue_id):
    root = server.client()
    task_id = new_slugid()
    root.createTask(task_id, new_task())
    as_one = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:change-task-priority:{task_id}"])})
    as_queue = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:change-task-priority-in-queue:{task_queue_id}"])})
    nobody = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, ["queue:change-task-priority:someone-else"])})
    assert as_one.changeTaskPriority(task_id, {"newPriority": "high"})["status"]["priority"] == "high"
    assert as_queue.changeTaskPriority(task_id, {"newPriority": "low"})["status"]["priority"] == "low"
    status, body = refusal(nobody.changeTaskPriority, task_id, {"newPriority": "medium"})
    assert status == 403 and body["code"] == "InsufficientScopes"
    assert root.status(task_id)["status"]["priority"] == "low"


def test_a_group_change_moves_its_unresolved_tasks_and_is_announced_once(server, queue, broker, new_task,
                                                                         task_queue_id):
    events = taskcluster.QueueEvents({"rootUrl": server.root_url})
    group_id, done, running, pending, waiting = (new_slugid() for _ in range(5))
    consumer = Consumer(broker.url, [events.taskGroupPriorityChanged({"taskGroupId": group_id}),
                                     events.taskPriorityChanged({"taskGroupId": group_id})])
    try:
        queue.createTask(done, new_task(taskGroupId=group_id, schedulerId="sched-p", priority="highest"))
        queue.createTask(running, new_task(taskGroupId=group_id, schedulerId="sched-p", priority="high"))
        assert claimed_ids(queue, task_queue_id, 2) == [done, running]
        queue.reportCompleted(done, "0")
        queue.createTask(pending, new_task(taskGroupId=group_id, schedulerId="sched-p"))
        queue.createTask(waiting, new_task(taskGroupId=group_id, schedulerId="sched-p", dependencies=[running]))

        answer = queue.changeTaskGroupPriority(group_id, {"newPriority": "very-high"})
        assert check_response("task-group-priority-change-response", answer) == []
        assert schema_errors("task-group-priority-change-response", answer) == []
        assert (answer["taskGroupId"], answer["schedulerId"], answer["newPriority"]) == (group_id, "sched-p",
                                                                                         "very-high")
        assert answer["tasksAffected"] == 3 and sorted(answer["taskIds"]) == sorted([running, pending, waiting])
        assert [queue.status(task_id)["status"]["priority"] for task_id in (done, running, pending, waiting)] == \
            ["highest", "very-high", "very-high", "very-high"]
        again = queue.changeTaskGroupPriority(group_id, {"newPriority": "very-high"})
        assert again["tasksAffected"] == 0 and again["taskIds"] == []

        received = consumer.wait_for(2)
        assert [message.name for message in received] == ["task-group-priority-changed"] * 2
        assert [message.body["tasksAffected"] for message in received] == [3, 0]
        assert all(schema_errors("task-group-priority-changed-message", message.body) == [] for message in received)
        assert received[0].routing_key == f"primary.{group_id}.sched-p._"
    finally:
        consumer.close()
    status, _ = refusal(queue.changeTaskGroupPriority, new_slugid(), {"newPriority": "low"})
    assert status == 404


def test_a_group_change_asks_for_the_groups_scheduler_id(server, new_task):
    root = server.client()
    group_id = new_slugid()
    root.createTask(new_slugid(), new_task(taskGroupId=group_id, schedulerId="sched-q"))
    allowed = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:change-task-group-priority:sched-q/{group_id}"])})
    other = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:change-task-group-priority:other/{group_id}"])})
    status, body = refusal(other.changeTaskGroupPriority, group_id, {"newPriority": "high"})
    assert status == 403 and f"sched-q/{group_id}" in body["message"]
    assert allowed.changeTaskGroupPriority(group_id, {"newPriority": "high"})["tasksAffected"] == 1


def test_a_task_priority_change_is_announced_with_both_priorities(server, queue, broker, new_task, task_queue_id):
    events = taskcluster.QueueEvents({"rootUrl": server.root_url})
    task_id = new_slugid()
    consumer = Consumer(broker.url, [events.taskPriorityChanged({"taskId": task_id})])
    try:
        queue.createTask(task_id, new_task(priority="low", routes=["notify.some.route"]))
        queue.changeTaskPriority(task_id, {"newPriority": "high"})
        [message] = consumer.wait_for(1)
        assert schema_errors("task-priority-changed-message", message.body) == []
        assert (message.body["oldPriority"], message.body["newPriority"]) == ("low", "high")
        assert message.body["status"]["taskId"] == task_id
        provisioner, worker_type = task_queue_id.split("/")
        assert message.routing_key.split(".") == ["primary", task_id, "_", "_", "_", provisioner, worker_type, "-",
                                                  task_id, "_"]
        assert list(message.cc) == ["route.notify.some.route"]
    finally:
        consumer.close()


TASKS, WORKERS, CHANGERS = 120, 6, 3


@pytest.mark.slow
def test_priority_changes_racing_claims_lose_no_run_and_claim_none_twice(own_server, new_task, task_queue_id):
    creator = own_server.client()
    task_ids = [new_slugid() for _ in range(TASKS)]
    for task_id in task_ids:
        creator.createTask(task_id, new_task(priority="lowest"))
    claims, lock, stop = [], threading.Lock(), threading.Event()
    changes = Counter()

    def changer(number: int) -> None:
        client, rng = own_server.client(), random.Random(number)
        while not stop.is_set():
            task_id = rng.choice(task_ids)
            try:
                client.changeTaskPriority(task_id, {"newPriority": rng.choice(["highest", "medium", "lowest"])})
                changes["changed"] += 1
            except taskcluster.TaskclusterRestFailure as failure:
                assert failure.status_code == 409, failure.body    # resolved by now, or that priority already
                changes["refused"] += 1

    def worker(number: int) -> None:
        client, empty = own_server.client(), 0
        while empty < 3:
            answer = client.claimWork(task_queue_id, {"workerGroup": "race", "workerId": f"w{number}",
                                                      "tasks": 1 + number % 3})
            empty = 0 if answer["tasks"] else empty + 1
            for claim in answer["tasks"]:
                with lock:
                    claims.append((claim["status"]["taskId"], claim["runId"]))
                client.reportCompleted(claim["status"]["taskId"], str(claim["runId"]))

    changers = [threading.Thread(target=changer, args=(number,)) for number in range(CHANGERS)]
    workers = [threading.Thread(target=worker, args=(number,)) for number in range(WORKERS)]
    for thread in changers + workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=600)
    stop.set()
    for thread in changers:
        thread.join(timeout=60)

    per_run = Counter(claims)
    assert [run for run, count in per_run.items() if count > 1] == []     # none claimed twice
    assert {task_id for task_id, _ in claims} == set(task_ids)            # none lost
    assert changes["changed"] > 0                                          # the changes did race the claims
    assert creator.listPendingTasks(task_queue_id)["tasks"] == []
    states = [entry["status"]["state"] for entry in creator.statuses({"taskIds": task_ids})["statuses"]]
    assert states == ["completed"] * TASKS
