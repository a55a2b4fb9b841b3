"""Task groups through the official Taskcluster client: sealing, cancelling, schedulerId."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.validation import check_response
from tests.reference import schema_errors



def conflict(call, *args, **kwargs) -> dict:
    """Call and expect Taskcluster's 409 RequestConflict; returns the error body."""
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        call(*args, **kwargs)
    assert error.value.status_code == 409, error.value.body
    assert error.value.body["code"] == "RequestConflict"
    return error.value.body


def not_found(call, *args) -> None:
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        call(*args)
    assert error.value.status_code == 404


def conforms_to_taskcluster(schema: str, body: dict) -> None:
    """Check a response against Taskcluster's own schema."""
    assert schema_errors(schema, body) == []


def test_a_sealed_group_takes_no_more_tasks(queue, new_task):
    group_id = new_slugid()
    member = new_slugid()
    queue.createTask(member, new_task(taskGroupId=group_id))
    assert "sealed" not in queue.listTaskGroup(group_id)
    sealed = queue.sealTaskGroup(group_id)
    assert check_response("task-group-response", sealed) == []
    assert sealed["taskGroupId"] == group_id and sealed["sealed"]
    assert queue.sealTaskGroup(group_id) == sealed           # sealing twice keeps the first time
    assert queue.getTaskGroup(group_id)["sealed"] == sealed["sealed"]

    late = new_slugid()
    assert "sealed" in conflict(queue.createTask, late, new_task(taskGroupId=group_id))["message"]
    not_found(queue.status, late)
    listing = queue.listTaskGroup(group_id)
    assert check_response("list-task-group-response", listing) == []
    conforms_to_taskcluster("list-task-group-response", listing)
    assert listing["sealed"] == sealed["sealed"]              # as getTaskGroup says
    assert [entry["status"]["taskId"] for entry in listing["tasks"]] == [member]
    # A task already in the group is still answered idempotently (it is not a new task).
    assert queue.createTask(member, queue.task(member))["status"]["taskId"] == member


def test_seal_of_an_unknown_group_is_404(queue):
    not_found(queue.sealTaskGroup, new_slugid())


def test_cancel_group_cancels_unscheduled_pending_and_running_tasks(queue, new_task, task_queue_id):
    group_id = new_slugid()
    done, running, pending = new_slugid(), new_slugid(), new_slugid()
    queue.createTask(done, new_task(taskGroupId=group_id, priority="highest"))
    queue.createTask(running, new_task(taskGroupId=group_id, priority="high"))
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 2})["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [done, running]
    queue.reportCompleted(done, "0")
    queue.createTask(pending, new_task(taskGroupId=group_id))
    unscheduled = new_slugid()
    queue.createTask(unscheduled, new_task(taskGroupId=group_id, dependencies=[running]))
    assert [queue.status(task_id)["status"]["state"] for task_id in (done, running, pending, unscheduled)] == \
        ["completed", "running", "pending", "unscheduled"]

    queue.sealTaskGroup(group_id)
    answer = queue.cancelTaskGroup(group_id)
    assert check_response("cancel-task-group-response", answer) == []
    conforms_to_taskcluster("cancel-task-group-response", answer)
    assert answer["taskGroupId"] == group_id
    assert answer["taskGroupSize"] == 4                       # every member, resolved or not
    assert answer["cancelledCount"] == 3 and sorted(answer["taskIds"]) == sorted([running, pending, unscheduled])

    for task_id in (running, pending, unscheduled):
        status = queue.status(task_id)["status"]
        assert status["state"] == "exception" and status["runs"][-1]["reasonResolved"] == "canceled"
    assert len(queue.status(unscheduled)["status"]["runs"]) == 1  # an unscheduled task gets a run for it
    assert queue.status(done)["status"]["state"] == "completed"   # resolved tasks are left alone
    conflict(queue.reportCompleted, running, "0")                # the worker learns its run is over
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 4})["tasks"] == []

    # Again: nothing is left to cancel. After a rerun only the new run is canceled.
    again = queue.cancelTaskGroup(group_id)
    assert (again["taskGroupSize"], again["cancelledCount"], again["taskIds"]) == (4, 0, [])
    queue.rerunTask(pending)
    third = queue.cancelTaskGroup(group_id)
    assert (third["cancelledCount"], third["taskIds"]) == (1, [pending])
    runs = queue.status(pending)["status"]["runs"]
    assert [(run["state"], run.get("reasonResolved")) for run in runs] == [("exception", "canceled")] * 2


def test_cancel_of_an_unsealed_group_is_409_and_cancels_nothing(queue, new_task):
    group_id = new_slugid()
    member = new_slugid()
    queue.createTask(member, new_task(taskGroupId=group_id))
    assert "sealed" in conflict(queue.cancelTaskGroup, group_id)["message"]
    assert queue.status(member)["status"]["state"] == "pending"


def test_cancel_of_an_unknown_group_is_404(queue):
    not_found(queue.cancelTaskGroup, new_slugid())


def test_a_group_keeps_the_scheduler_id_of_its_first_task(queue, new_task):
    group_id = new_slugid()
    first = new_slugid()
    queue.createTask(first, new_task(taskGroupId=group_id, schedulerId="first"))
    refused = new_slugid()
    message = conflict(queue.createTask, refused, new_task(taskGroupId=group_id, schedulerId="second"))["message"]
    assert "first" in message and "second" in message
    not_found(queue.status, refused)                          # nothing was created
    group = queue.getTaskGroup(group_id)
    assert group["schedulerId"] == "first"
    assert [entry["status"]["taskId"] for entry in queue.listTaskGroup(group_id)["tasks"]] == [first]
    # The same schedulerId is still welcome.
    queue.createTask(new_slugid(), new_task(taskGroupId=group_id, schedulerId="first"))
    assert len(queue.listTaskGroup(group_id)["tasks"]) == 2


def test_a_refused_create_leaves_no_phantom_member(queue, new_task):
    """createTask refused for an unknown dependency must not leave the task in its group:
    cancelTaskGroup's taskGroupSize counts members, so a phantom one would show there."""
    group_id = new_slugid()
    member = new_slugid()
    queue.createTask(member, new_task(taskGroupId=group_id))
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.createTask(new_slugid(), new_task(taskGroupId=group_id, dependencies=[new_slugid()]))
    assert error.value.status_code == 400
    queue.sealTaskGroup(group_id)
    answer = queue.cancelTaskGroup(group_id)
    assert (answer["taskGroupSize"], answer["taskIds"]) == (1, [member])
    # Nor may a refused task in a group of its own (the default taskGroupId) create that group.
    refused = new_slugid()
    with pytest.raises(taskcluster.TaskclusterRestFailure):
        queue.createTask(refused, new_task(dependencies=[new_slugid()]))
    not_found(queue.getTaskGroup, refused)


def test_a_group_expires_a_step_past_its_tasks_as_taskclusters(queue, new_task):
    """Taskcluster 106 gives a group its tasks' latest expiry plus an hour, a task given no
    group too (ours keeps that group with its task, and says so all the same)."""
    alone, group_id, member = new_slugid(), new_slugid(), new_slugid()
    queue.createTask(alone, new_task())
    queue.createTask(member, new_task(taskGroupId=group_id))
    for group, task_id in ((alone, alone), (group_id, member)):
        expires = datetime.fromisoformat(queue.task(task_id)["expires"].replace("Z", "+00:00"))
        shown = datetime.fromisoformat(queue.getTaskGroup(group)["expires"].replace("Z", "+00:00"))
        assert shown - expires == timedelta(hours=1), group
    before = queue.getTaskGroup(alone)["expires"]
    joined = new_slugid()   # another task joining the lone group: it says no less than before
    queue.createTask(joined, new_task(taskGroupId=alone, expires=queue.task(alone)["expires"]))
    assert queue.getTaskGroup(alone)["expires"] == queue.listTaskGroup(alone)["expires"] == before
