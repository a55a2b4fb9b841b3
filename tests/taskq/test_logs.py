"""`taskq log` through a real local host: it never sits silent, never waits for a run that
cannot come, and says so in one line when a worker's live log is gone (reading the complete
log where there is one)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import taskcluster

from devhost.processes import free_port
from shared.domain.timestamps import to_iso, utcnow
from taskq_worker.artifacts import upload_file
from tests.conftest import ROOT, eventually, make_task
from tests.taskq_worker.conftest import processes_running, start_worker  # noqa: F401  (the fixture)

LOG = "public/logs/live.log"
BACKING = "public/logs/live_backing.log"


def one_line_error(result, *words: str) -> str:
    """The command failed with one line on stderr holding `words`, and no traceback."""
    assert result.status == 1, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


def test_a_run_past_the_last_is_refused_at_once(taskq, queue, task_queue_id, task_id):
    queue.createTask(task_id, make_task(task_queue_id))
    asked = taskq("log", task_id, "--run", "7", timeout=20)   # it waited forever before
    one_line_error(asked, f"task {task_id} has no run 7: it has only run 0 (pending)")


def test_a_pending_task_without_a_worker_says_what_it_waits_for(server, queue, task_queue_id, task_id, tmp_path):
    queue.createTask(task_id, make_task(task_queue_id))
    stderr = tmp_path / "stderr.txt"
    environment = {**os.environ, "TASKCLUSTER_ROOT_URL": server.root_url, "PYTHONPATH": str(ROOT),
                   "TASKCLUSTER_CLIENT_ID": server.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": server.credentials["accessToken"]}
    following = subprocess.Popen([sys.executable, "-m", "taskq", "log", task_id], cwd=ROOT, env=environment,
                                 stdout=subprocess.DEVNULL, stderr=stderr.open("w"))
    try:
        said = eventually(lambda: stderr.read_text(), timeout=30, message="taskq log saying something")
    finally:
        following.kill()
        following.wait()
    assert said.startswith(f"run 0 of {task_id} is pending: waiting for a worker on {task_queue_id}")
    assert f"make worker QUEUE={task_queue_id}" in said   # no worker has ever claimed from it


def _resolved_with_a_gone_live_log(queue, task_queue_id: str, task_id: str, backing: bytes | None, tmp_path):
    """A failed run whose live.log still refers to a worker's server that is gone (nothing
    listens on its port), as a worker leaves it when the complete log was not uploaded."""
    queue.createTask(task_id, make_task(task_queue_id))
    claim = queue.claimWork(task_queue_id, {"workerGroup": "tests", "workerId": "gone", "tasks": 1})["tasks"][0]
    run = str(claim["runId"])
    expires = to_iso(utcnow() + timedelta(days=1))
    queue.createArtifact(task_id, run, LOG, {"storageType": "reference", "expires": expires,
                                             "contentType": "text/plain; charset=utf-8",
                                             "url": f"http://127.0.0.1:{free_port()}/log/token"})
    if backing is not None:
        (tmp_path / "backing.log").write_bytes(backing)
        upload_file(queue, task_id, int(run), BACKING, tmp_path / "backing.log", expires, "text/plain; charset=utf-8")
    queue.reportFailed(task_id, run)


def test_a_gone_live_log_is_read_from_the_complete_log(taskq, queue, task_queue_id, task_id, tmp_path):
    _resolved_with_a_gone_live_log(queue, task_queue_id, task_id, b"line one\nline two\n", tmp_path)
    shown = taskq("log", task_id)
    assert shown.status == 1 and shown.stdout == "line one\nline two\n"   # 1: the run failed
    assert f"the live log of run 0 of {task_id} is gone (its worker at 127.0.0.1:" in shown.stderr
    assert f"cannot be reached: it has stopped); reading the complete log, {BACKING}" in shown.stderr
    assert "Traceback" not in shown.stderr


def test_a_gone_live_log_without_a_complete_log_is_one_line(taskq, queue, task_queue_id, task_id, tmp_path):
    _resolved_with_a_gone_live_log(queue, task_queue_id, task_id, None, tmp_path)
    one_line_error(taskq("log", task_id), "is gone", f"its worker did not upload {BACKING}")
    downloaded = taskq("download", task_id, LOG, "--dest", str(tmp_path / "out"))
    assert downloaded.status == 1 and "Traceback" not in downloaded.stderr
    assert downloaded.stdout.startswith(f"{LOG}: not downloaded (NoLog): the live log")
    assert not (tmp_path / "out" / "public").exists()


def test_a_cancelled_tasks_log_and_download_end_in_a_line_not_a_traceback(taskq, start_worker, queue,  # noqa: F811
                                                                          new_task, task_id, tmp_path):
    worker = start_worker(new_task()["taskQueueId"])
    marker = "600.2424242"
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", f"echo before the sleep; sleep {marker}"]],
                                                "maxRunTime": 600}))
    eventually(lambda: processes_running(f"sleep {marker}"), timeout=30, message="the sleep running")
    assert taskq("cancel", task_id).status == 0
    eventually(lambda: not processes_running(f"sleep {marker}"), timeout=10, message="the command stopped")
    worker.stop(timeout=30)   # and its live log server with it
    shown = taskq("log", task_id)
    downloaded = taskq("download", task_id, "--dest", str(tmp_path / "out"))
    for result in (shown, downloaded):
        assert result.status == 1 and "Traceback" not in result.stderr, result.stderr
    # The complete log, where the Queue took it from the cancelled run; otherwise one line saying so.
    if "before the sleep" not in shown.stdout:
        one_line_error(shown, "is gone", BACKING)
        assert f"{LOG}: not downloaded (NoLog)" in downloaded.stdout
        assert not (tmp_path / "out" / "public" / "logs" / "live.log").exists()


def test_a_task_that_can_never_run_is_said_so_instead_of_waited_for(taskq, queue, task_queue_id, task_id):
    first = taskcluster.slugId()
    queue.createTask(first, make_task(task_queue_id))
    queue.createTask(task_id, make_task(task_queue_id, dependencies=[first]))
    claim = queue.claimWork(task_queue_id, {"workerGroup": "tests", "workerId": "w", "tasks": 1})["tasks"][0]
    queue.reportFailed(first, str(claim["runId"]))
    one_line_error(taskq("log", task_id, timeout=30), f"{task_id} will never run: its dependency {first} is failed")
