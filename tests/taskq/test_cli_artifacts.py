"""WAITS ON THE ARTIFACTS ISSUE: `taskq log` and `taskq download` on what a real worker made."""

from __future__ import annotations

import json

from tests.taskq_worker.conftest import start_worker  # noqa: F401  (the fixture)
from tests.taskq_worker.test_worker import _resolved


def test_log_follows_a_running_task_to_its_end(taskq, start_worker, queue, new_task, task_id):  # noqa: F811
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo first; sleep 2; echo second"]],
                                                "maxRunTime": 60}))
    followed = taskq("log", task_id, timeout=60)  # started before the task ran
    assert followed.status == 0, followed.stderr
    assert followed.stdout.count("first\n") == 1 and followed.stdout.count("second\n") == 1
    assert followed.stdout.index("first") < followed.stdout.index("second")


def test_log_of_a_failed_task_exits_non_zero(taskq, start_worker, queue, new_task, task_id):  # noqa: F811
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo oops; exit 1"]], "maxRunTime": 60}))
    _resolved(queue, task_id)
    shown = taskq("log", task_id)
    assert shown.status == 1 and "oops" in shown.stdout


def test_download_writes_every_artifact_and_reports_error_artifacts(taskq, start_worker, queue, new_task,  # noqa: F811
                                                                    task_id, tmp_path):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={
        "command": [["sh", "-c", "mkdir -p out; echo hello > out/a.txt"]], "maxRunTime": 60,
        "artifacts": [{"type": "file", "path": "out/a.txt", "name": "public/a.txt"},
                      {"type": "file", "path": "out/none.txt", "name": "public/none.txt"}]}))
    assert _resolved(queue, task_id)["state"] == "completed"
    one = taskq("download", task_id, "public/a.txt", "--dest", str(tmp_path / "one"))
    assert one.status == 0, one.stderr
    assert (tmp_path / "one" / "public" / "a.txt").read_text() == "hello\n"
    everything = taskq("download", task_id, "--dest", str(tmp_path / "all"), "--json")
    assert everything.status == 1  # one of them is an error artifact
    results = {item["name"]: item for item in everything.json()["artifacts"]}
    assert results["public/none.txt"]["error"] == "file-missing-on-worker"
    assert (tmp_path / "all" / "public" / "a.txt").read_text() == "hello\n"
    assert "exit code 0" in (tmp_path / "all" / "public" / "logs" / "live.log").read_text()
    assert results["public/results.json"]["contentType"] == "application/json"      # the queue's s3 artifact
    assert json.loads((tmp_path / "all" / "public" / "results.json").read_text())["state"] == "completed"


def test_a_missing_artifact_is_reported_and_leaves_no_file(taskq, start_worker, queue, new_task, task_id,  # noqa: F811
                                                          tmp_path):
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo hello > a.txt"]], "maxRunTime": 60,
                                                "artifacts": [{"type": "file", "path": "a.txt",
                                                               "name": "public/a.txt"}]}))
    assert _resolved(queue, task_id)["state"] == "completed"
    asked = taskq("download", task_id, "public/nope.txt", "public/a.txt", "--dest", str(tmp_path / "out"))
    assert asked.status == 1 and "Traceback" not in asked.stderr
    assert asked.stdout.splitlines()[0].startswith("public/nope.txt: not downloaded (ResourceNotFound): ")
    assert not (tmp_path / "out" / "public" / "nope.txt").exists()   # an empty file was left before
    assert (tmp_path / "out" / "public" / "a.txt").read_text() == "hello\n"   # the others still come
