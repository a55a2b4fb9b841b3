"""The watchdog's timer in a real local host, seen as users see it: the scheduler API through
a client the official library makes, the browser view's data, `taskq group`, a
`task-group-stalled` message on RabbitMQ, and the host's log. The stall time is 2 s, the
timer fires every second, and the claim resolver's own timer never fires (once a year), so
that a run a worker abandoned is the watchdog's to find."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import requests
import taskcluster

from shared.domain.exchanges import prefix_of
from shared.domain.ids import new_slugid
from taskq.scheduler import Scheduler
from tests.api.conftest import temporary
from tests.conftest import ROOT, eventually, make_task, start_server
from tests.events.amqp_consumer import Consumer
from tests.taskq.conftest import run_taskq

SETTINGS = {"QUEUE_WATCHDOG_STALL_SECONDS": "2", "QUEUE_WATCHDOG_SCHEDULE": "*/1 * * * * *",
            "QUEUE_CLAIM_RESOLVER_SCHEDULE": "0 0 0 1 1 *", "TASK_CLAIM_TIMEOUT": "4"}


@pytest.fixture(scope="module")
def host(azurite, tmp_path_factory):
    server = start_server(azurite, tmp_path_factory.mktemp("watchdog"), **SETTINGS)
    yield server
    server.stop()


def scheduler(server, credentials: dict | None = None) -> Scheduler:
    return Scheduler({"rootUrl": server.root_url, "maxRetries": 0,
                      "credentials": dict(credentials or server.credentials)})


def stalled_consumer(server, group_id: str) -> Consumer:
    """A consumer bound to our exchange for one group, as any AMQP client binds it."""
    return Consumer(server.env["EVENTS_AMQP_URL"], [{"exchange": prefix_of("queue") + "task-group-stalled",
                                                     "routingKeyPattern": f"primary.{group_id}.#"}])


def test_tasks_nobody_serves_are_reported_everywhere_users_look(host, task_queue_id):
    queue, group = host.client(), new_slugid()
    events = stalled_consumer(host, group)
    try:
        for _ in range(2):
            queue.createTask(new_slugid(), make_task(task_queue_id, taskGroupId=group))
        found = eventually(lambda: (view := scheduler(host).taskGroupWatchdog(group))["state"] == "no-workers" and view,
                           timeout=30, interval=0.5, message="no-workers reported")
        assert found["counts"]["pending"] == 2 and found["findings"][0]["taskQueueId"] == task_queue_id
        [message] = events.wait_for(1, timeout=15)
        assert message.routing_key == f"primary.{group}.-.no-workers" and message.body["counts"] == found["counts"]
    finally:
        events.close()
    ui = requests.get(f"{host.root_url}/api/ui/data/task-group/{group}/watchdog", auth=host.auth, timeout=10)
    assert ui.status_code == 200 and ui.json() == found
    shown = run_taskq(host, "group", group)
    assert shown.status == 0 and f"watchdog: no-workers since {found['since']}" in shown.stderr
    assert f"{task_queue_id}: 2 pending" in shown.stderr
    assert run_taskq(host, "group", group, "--json").json()["watchdog"] == found
    log = host.log_path.read_text()
    assert any(group in line and "no-workers" in line and "pending 2" in line for line in log.splitlines())
    queue.getTaskGroup(group)   # Taskcluster's answer is unchanged: its schema allows no more fields


def test_a_run_whose_worker_was_killed_is_handed_to_the_claim_resolver(host, task_queue_id, tmp_path):
    queue, group, task_id = host.client(), new_slugid(), new_slugid()
    queue.createTask(task_id, make_task(task_queue_id, taskGroupId=group, payload={
        "command": [["sleep", "600"]], "maxRunTime": 900}))
    environment = {**os.environ, "TASKCLUSTER_ROOT_URL": host.root_url, "PYTHONPATH": str(ROOT),
                   "TASKCLUSTER_CLIENT_ID": host.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": host.credentials["accessToken"]}
    worker = subprocess.Popen([sys.executable, "-m", "taskq_worker", "--queue", task_queue_id, "--no-live-log",
                               "--work-dir", str(tmp_path)], cwd=ROOT, env=environment, start_new_session=True,
                              stdout=(tmp_path / "worker.log").open("ab"), stderr=subprocess.STDOUT)
    try:
        eventually(lambda: queue.status(task_id)["status"]["state"] == "running", timeout=60,
                   message="the worker running the task")
    finally:
        os.killpg(worker.pid, signal.SIGKILL)   # gone at once: no resolution, no more reclaims
        worker.wait(timeout=30)
    runs = eventually(lambda: len(runs := queue.status(task_id)["status"]["runs"]) == 2 and runs, timeout=30,
                      interval=0.5, message="the abandoned run resolved and retried")
    assert (runs[0]["state"], runs[0]["reasonResolved"], runs[1]["reasonCreated"]) == (
        "exception", "claim-expired", "retry")
    assert f"task {task_id} run 0 still running past its takenUntil" in host.log_path.read_text()


def test_only_a_caller_who_may_cancel_the_group_may_have_it_cancelled_once_stalled(host, task_queue_id):
    queue, group = host.client(), new_slugid()
    queue.createTask(new_slugid(), make_task(task_queue_id, taskGroupId=group))
    reader = scheduler(host, temporary(host.credentials, [f"queue:list-task-group:{group}"]))
    assert reader.taskGroupWatchdog(group)["onStall"] == "report"
    with pytest.raises(taskcluster.exceptions.TaskclusterRestFailure) as refused:
        reader.setTaskGroupWatchdog(group, {"onStall": "cancel"})
    assert refused.value.status_code == 403
    assert f"queue:cancel-task-group:-/{group}" in refused.value.body["message"]
    with pytest.raises(taskcluster.exceptions.TaskclusterRestFailure) as invalid:
        scheduler(host).setTaskGroupWatchdog(group, {"onStall": "explode"})
    assert invalid.value.status_code == 400 and "onStall" in invalid.value.body["message"]
    set_by_taskq = run_taskq(host, "on-stall", group, "cancel", "--json")
    assert set_by_taskq.status == 0 and set_by_taskq.json()["onStall"] == "cancel"
    assert scheduler(host).taskGroupWatchdog(group)["onStall"] == "cancel"
