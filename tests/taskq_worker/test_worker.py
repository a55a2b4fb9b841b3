"""`make worker` runs generic-worker payloads from a real local host: the run's outcome, its
time limits, cancellation, shutdown and malformed payloads. (Logs and artifacts, which need
the artifacts issue's object protocol, are in test_worker_artifacts.py.)"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from tests.conftest import eventually, start_server
from tests.taskq_worker.conftest import processes_running


def _state(queue, task_id: str) -> str:
    return queue.status(task_id)["status"]["state"]


def _resolved(queue, task_id: str, timeout: float = 30) -> dict:
    return eventually(lambda: (lambda status: status if status["state"] in ("completed", "failed", "exception")
                               else None)(queue.status(task_id)["status"]), timeout=timeout, message="resolution")


def _sleep_marker() -> str:
    """An argument for `sleep` that no other process has: `sleep 600.<random digits>`."""
    return f"600.{uuid.uuid4().int % 10**9:09d}"


def _sleeping(queue, new_task, task_id: str, script: str, max_run_time: int) -> str:
    """Create a task whose shell `script` (with {sleep} for a unique sleep) runs, and return
    the sleep's command line once it is running."""
    sleep = f"sleep {_sleep_marker()}"
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", script.format(sleep=sleep)]],
                                                "maxRunTime": max_run_time}))
    eventually(lambda: processes_running(sleep), timeout=30, message="the sleep running")
    return sleep


def test_exit_code_zero_completes_and_anything_else_fails(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo one; echo two > out.txt"],
                                                            ["test", "-f", "out.txt"]], "maxRunTime": 60}))
    assert _resolved(queue, task_id)["state"] == "completed"
    failing = new_slugid()
    queue.createTask(failing, new_task(payload={"command": [["sh", "-c", "exit 3"], ["touch", "never"]],
                                                "maxRunTime": 60}))
    status = _resolved(queue, failing)
    assert status["state"] == "failed" and status["runs"][0]["reasonResolved"] == "failed"


def test_a_command_that_cannot_start_fails_the_run(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["no-such-program-here"]], "maxRunTime": 60}))
    assert _resolved(queue, task_id)["state"] == "failed"


def test_env_reaches_the_command_and_the_workers_credentials_do_not(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])   # with TASKCLUSTER_ACCESS_TOKEN set: it must not reach the command
    script = 'test "$GREETING" = hello && test "$TASK_ID" = "' + task_id + '" && test -z "$TASKCLUSTER_ACCESS_TOKEN"'
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", script]], "env": {"GREETING": "hello"},
                                                "maxRunTime": 60}))
    assert _resolved(queue, task_id)["state"] == "completed"


def test_cancel_stops_a_long_sleep_within_5_seconds(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    sleep = _sleeping(queue, new_task, task_id, "{sleep}; echo never", max_run_time=600)
    cancelled_at = time.monotonic()
    queue.cancelTask(task_id)
    eventually(lambda: not processes_running(sleep), timeout=5, interval=0.1,
               message="the command stopped")
    assert time.monotonic() - cancelled_at < 5
    status = queue.status(task_id)["status"]
    assert status["state"] == "exception" and status["runs"][0]["reasonResolved"] == "canceled"


def test_max_run_time_fails_an_endless_command_and_kills_its_process_group(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    # The shell starts a child; killing the group must take the child too.
    sleep = _sleeping(queue, new_task, task_id, "{sleep} & wait", max_run_time=2)
    started = time.monotonic()
    status = _resolved(queue, task_id, timeout=15)
    assert status["state"] == "failed" and time.monotonic() - started < 8
    eventually(lambda: not processes_running(sleep), timeout=5, message="the process group killed")


def test_a_malformed_payload_is_never_run(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": "echo hello", "maxRunTime": 60}))
    status = _resolved(queue, task_id)
    assert status["state"] == "exception" and status["runs"][0]["reasonResolved"] == "malformed-payload"


def test_sigterm_reports_worker_shutdown_for_what_it_holds_and_exits(start_worker, queue, new_task, task_id):
    worker = start_worker(new_task()["taskQueueId"])
    marker = _sleep_marker()
    queue.createTask(task_id, new_task(payload={"command": [["sleep", marker]], "maxRunTime": 600}))
    eventually(lambda: processes_running(f"sleep {marker}"), timeout=30, message="the sleep running")
    worker.stop(timeout=30)  # SIGTERM, then the worker and make must be gone
    assert not processes_running(f"sleep {marker}")
    runs = queue.status(task_id)["status"]["runs"]
    assert runs[0]["state"] == "exception" and runs[0]["reasonResolved"] == "worker-shutdown"
    assert runs[1]["state"] == "pending"  # the Queue retries it at once
    assert "worker stopped" in worker.log()


def test_capacity_runs_tasks_side_by_side(start_worker, queue, new_task):
    start_worker(new_task()["taskQueueId"], "--capacity", "3")
    marker = _sleep_marker()
    task_ids = [new_slugid() for _ in range(3)]
    for each in task_ids:
        queue.createTask(each, new_task(payload={"command": [["sleep", marker]], "maxRunTime": 2}))
    eventually(lambda: len(processes_running(f"sleep {marker}")) == 3, timeout=30, message="three at once")
    assert all(_resolved(queue, each)["state"] == "failed" for each in task_ids)


@pytest.fixture
def short_claims_server(azurite, tmp_path):
    instance = start_server(azurite, tmp_path, TASK_CLAIM_TIMEOUT="4")
    yield instance
    instance.stop()


def test_the_worker_reclaims_before_taken_until(start_worker, short_claims_server, new_task, task_id):
    queue = short_claims_server.client()
    start_worker(new_task()["taskQueueId"], on=short_claims_server)
    queue.createTask(task_id, new_task(payload={"command": [["sleep", "7"]], "maxRunTime": 60}))
    status = _resolved(queue, task_id, timeout=30)
    assert status["state"] == "completed" and len(status["runs"]) == 1  # never lost to claim expiry


@pytest.fixture
def long_poll_server(azurite, tmp_path):
    """claimWork waits 20 s for work, as it does by default."""
    instance = start_server(azurite, tmp_path, CLAIM_WORK_WAIT_SECONDS="20")
    yield instance
    instance.stop()


def test_ctrl_c_stops_an_idle_worker_within_2_seconds(start_worker, long_poll_server, new_task):
    queue = long_poll_server.client()
    task_queue_id = new_task()["taskQueueId"]
    worker_id = f"idle-{uuid.uuid4().hex[:8]}"
    worker = start_worker(task_queue_id, "--worker-id", worker_id, on=long_poll_server)
    # The Queue notes the worker as its claimWork begins: from then on the call waits (20 s).
    provisioner, worker_type = task_queue_id.split("/")
    eventually(lambda: _known_worker(queue, provisioner, worker_type, worker_id), timeout=30,
               message="the worker's claimWork waiting at the Queue")
    interrupted = time.monotonic()
    os.killpg(worker.process.pid, signal.SIGINT)   # what a terminal's Ctrl-C sends: the whole group
    eventually(lambda: worker.process.poll() is not None, timeout=20, interval=0.02, message="the worker exiting")
    took = time.monotonic() - interrupted
    print(f"the idle worker stopped {took:.2f} s after SIGINT")
    assert took < 2, f"the worker took {took:.1f} s to stop"
    assert "worker stopped" in worker.log()


def _known_worker(queue, provisioner: str, worker_type: str, worker_id: str) -> bool:
    try:
        queue.getWorker(provisioner, worker_type, "local", worker_id)
    except taskcluster.exceptions.TaskclusterRestFailure:
        return False
    return True
