"""WAITS ON THE ARTIFACTS ISSUE (createArtifact / finishArtifact / artifact with the object
protocol, link and reference artifacts): the worker's log and artifacts, read back with the
official client. Everything here passes once the Queue serves artifacts."""

from __future__ import annotations

import pytest
import requests
import taskcluster
from taskcluster.download import downloadArtifactToBuf

from tests.conftest import eventually
from tests.taskq.conftest import run_taskq
from tests.taskq_worker.test_worker import _resolved

WRITES_AND_PRINTS = ["sh", "-c", "echo line one; echo line two; mkdir -p out/deep; echo result > out/result.txt; "
                                 "echo nested > out/deep/n.txt"]


def _download(queue, task_id: str, name: str) -> bytes:
    return bytes(downloadArtifactToBuf(taskId=task_id, name=name, queueService=queue)[0])


def test_a_completed_tasks_log_and_artifacts_download_with_the_official_client(start_worker, queue, new_task,
                                                                              task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={
        "command": [WRITES_AND_PRINTS], "maxRunTime": 60,
        "artifacts": [{"type": "file", "path": "out/result.txt", "name": "public/result.txt"},
                      {"type": "directory", "path": "out/deep", "name": "public/deep"},
                      {"type": "file", "path": "not/there.txt", "name": "public/missing.txt"}]}))
    assert _resolved(queue, task_id)["state"] == "completed"
    log = _download(queue, task_id, "public/logs/live.log").decode()
    assert "line one\nline two\n" in log and "exit code 0" in log
    assert _download(queue, task_id, "public/result.txt") == b"result\n"
    assert _download(queue, task_id, "public/deep/n.txt") == b"nested\n"
    with pytest.raises(taskcluster.exceptions.TaskclusterArtifactError) as missing:
        _download(queue, task_id, "public/missing.txt")
    assert missing.value.reason == "file-missing-on-worker"


def test_a_failing_commands_log_says_why(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo about to fail; exit 7"]],
                                                "maxRunTime": 60}))
    assert _resolved(queue, task_id)["state"] == "failed"
    log = _download(queue, task_id, "public/logs/live.log").decode()
    assert "about to fail" in log and "exit code 7" in log


def test_a_malformed_payloads_reason_is_in_its_log(start_worker, queue, new_task, task_id):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["echo", 1]], "maxRunTime": 60}))
    assert _resolved(queue, task_id)["runs"][0]["reasonResolved"] == "malformed-payload"
    log = _download(queue, task_id, "public/logs/live.log").decode()
    assert "malformed payload: payload.command[0]" in log and "nothing was run" in log


def test_the_log_is_readable_while_the_task_runs(start_worker, queue, new_task, task_id, tmp_path):
    start_worker(new_task()["taskQueueId"])
    gate = tmp_path / "go"
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", f"echo first; while [ ! -f {gate} ]; "
                                                                         "do sleep 0.1; done; echo second"]],
                                                "maxRunTime": 60}))
    live = eventually(lambda: _live_reference(queue, task_id), timeout=30, message="the live log artifact")
    with requests.get(live["url"], stream=True, timeout=30) as response:
        seen = b""
        for chunk in response.iter_content(chunk_size=None):
            seen += chunk
            if b"first\n" in seen:
                break
    assert queue.status(task_id)["status"]["state"] == "running"  # read before the task ended
    gate.touch()
    assert _resolved(queue, task_id)["state"] == "completed"
    assert "first\nsecond\n" in _download(queue, task_id, "public/logs/live.log").decode()


def _live_reference(queue, task_id: str):
    try:
        artifact = queue.artifact(task_id, "0", "public/logs/live.log")
    except taskcluster.exceptions.TaskclusterRestFailure:
        return None
    return artifact if artifact["storageType"] == "reference" else None


def test_a_cancelled_tasks_log_is_uploaded_after_the_cancel(start_worker, server, queue, new_task, task_id):
    """Taskcluster lets a run resolved `exception` take artifacts for 25 minutes: the worker
    learns of the cancel, stops the command and then uploads the log with its claim's
    credentials, which still work for that (not for anything else on the run)."""
    worker = start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo before the cancel; sleep 600"]],
                                                "maxRunTime": 600}))
    eventually(lambda: queue.status(task_id)["status"]["state"] == "running", timeout=30, message="running")
    eventually(lambda: _live_reference(queue, task_id), timeout=30, message="the live log artifact")
    cancelled = run_taskq(server, "cancel", task_id)
    assert cancelled.status == 0, cancelled.stderr
    status = queue.status(task_id)["status"]
    assert status["state"] == "exception" and status["runs"][0]["reasonResolved"] == "canceled"
    log = eventually(lambda: _log_after_cancel(queue, task_id), timeout=30, message="the log after the cancel")
    assert "before the cancel" in log and "the run was cancelled; commands stopped" in log
    assert "log not uploaded" not in worker.log()


def _log_after_cancel(queue, task_id: str) -> str | None:
    """The log once its final upload replaced the live reference (None before)."""
    try:
        if queue.artifact(task_id, "0", "public/logs/live.log")["storageType"] == "reference":
            return None
        return _download(queue, task_id, "public/logs/live.log").decode()
    except (taskcluster.exceptions.TaskclusterRestFailure, taskcluster.exceptions.TaskclusterArtifactError):
        return None
