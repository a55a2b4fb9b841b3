"""Time through the running host: its timer functions expire claims, resolve deadlines and
delete expired tasks within 5 seconds of the due time (schedules of one second here)."""

import time
from datetime import timedelta

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from tests.api.test_task_lifecycle import claim_one
from tests.conftest import start_server

WITHIN = 5.0


@pytest.fixture(scope="module")
def quick(azurite, tmp_path_factory):
    """A host whose claims last 2 seconds."""
    server = start_server(azurite, tmp_path_factory.mktemp("quick"), TASK_CLAIM_TIMEOUT="2")
    yield server
    server.stop()


def seconds_until(predicate, due, limit: float = 30) -> float:
    """Poll until `predicate()` holds; how long after `due` (a datetime) that was."""
    give_up = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < give_up, "never happened"
        time.sleep(0.2)
    return (utcnow() - due).total_seconds()


def runs(queue, task_id):
    return queue.status(task_id)["status"]["runs"]


def test_an_expired_claim_is_retried_then_resolves_when_retries_run_out(quick, new_task, task_queue_id):
    queue, task_id = quick.client(), new_slugid()
    queue.createTask(task_id, new_task(retries=1))
    taken_until = parse_iso(claim_one(queue, task_queue_id)["takenUntil"])
    assert seconds_until(lambda: len(runs(queue, task_id)) == 2, taken_until) < WITHIN
    assert [run.get("reasonResolved") for run in runs(queue, task_id)] == ["claim-expired", None]
    assert runs(queue, task_id)[1]["reasonCreated"] == "retry"
    taken_until = parse_iso(claim_one(queue, task_queue_id)["takenUntil"])
    state = lambda: queue.status(task_id)["status"]["state"]  # noqa: E731
    assert seconds_until(lambda: state() == "exception", taken_until) < WITHIN
    assert len(runs(queue, task_id)) == 2


def test_reclaims_keep_a_claim_alive_across_several_timeouts(quick, new_task, task_queue_id):
    queue, task_id = quick.client(), new_slugid()
    queue.createTask(task_id, new_task())
    claim_one(queue, task_queue_id)
    for _ in range(4):                                  # 4 x 1.2 s: well past the 2 s timeout
        time.sleep(1.2)
        queue.reclaimTask(task_id, "0")
    assert queue.reportCompleted(task_id, "0")["status"]["state"] == "completed"


def test_a_deadline_passes_for_a_pending_task_and_its_dependent_is_processed(quick, new_task, task_queue_id):
    queue, task_id, dependent = quick.client(), new_slugid(), new_slugid()
    deadline = utcnow() + timedelta(seconds=2)
    queue.createTask(task_id, new_task(deadline=to_iso(deadline)))
    queue.createTask(dependent, new_task(dependencies=[task_id], requires="all-resolved"))
    state = lambda: queue.status(task_id)["status"]["state"]  # noqa: E731
    assert seconds_until(lambda: state() == "exception", deadline) < WITHIN
    assert runs(queue, task_id)[-1]["reasonResolved"] == "deadline-exceeded"
    seconds_until(lambda: queue.status(dependent)["status"]["state"] == "pending", deadline)
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        queue.rerunTask(task_id)
    assert caught.value.status_code == 409


def test_an_expired_task_and_its_group_are_gone(quick, new_task, task_queue_id):
    """A task given no group has one of its own, which goes with it (a group shared by tasks
    is kept an hour past the latest's expiry, as Taskcluster keeps it: tests/services/sweeps)."""
    queue, task_id = quick.client(), new_slugid()
    group_id = task_id
    expires = utcnow() + timedelta(seconds=3)
    queue.createTask(task_id, new_task(deadline=to_iso(expires), expires=to_iso(expires)))
    claim_one(queue, task_queue_id)
    queue.reportCompleted(task_id, "0")

    def gone(call) -> bool:
        try:
            call()
            return False
        except taskcluster.TaskclusterRestFailure as error:
            return error.status_code == 404
    assert seconds_until(lambda: gone(lambda: queue.status(task_id)), expires) < WITHIN
    assert gone(lambda: queue.getTaskGroup(group_id)) and gone(lambda: queue.task(task_id))
