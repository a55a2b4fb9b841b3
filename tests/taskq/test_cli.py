"""`taskq` through a real local host: create, status, cancel, rerun, graphs, groups, errors."""

from __future__ import annotations

import threading

import taskcluster
import yaml

from tests.conftest import eventually


def _task_file(tmp_path, task_queue_id: str, name: str = "hello.yml", **extra) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"taskQueueId": task_queue_id,
                                    "payload": {"command": [["echo", "hello"]], "maxRunTime": 60}, **extra}))
    return str(path)


def test_create_from_yaml_fills_what_people_leave_out_then_status(taskq, queue, tmp_path, task_queue_id):
    created = taskq("create", _task_file(tmp_path, task_queue_id))
    assert created.status == 0, created.stderr
    task_id = created.stdout.strip()
    definition = queue.task(task_id)
    assert definition["metadata"]["name"] == "hello" and definition["payload"]["command"] == [["echo", "hello"]]
    assert "/api/ui/task-group/" in created.stderr
    status = taskq("status", task_id)
    assert status.status == 0 and status.stdout.splitlines()[0] == f"{task_id} pending"
    assert taskq("status", task_id, "--json").json()["status"]["state"] == "pending"


def test_create_from_json_with_a_queue_given_on_the_command_line(taskq, queue, tmp_path, task_queue_id):
    path = tmp_path / "task.json"
    path.write_text('{"payload": {"command": [["true"]]}, "metadata": {"name": "from json"}}')
    created = taskq("create", str(path), "--queue", task_queue_id, "--json")
    assert created.status == 0, created.stderr
    answer = created.json()
    assert answer["status"]["taskQueueId"] == task_queue_id
    assert queue.task(answer["taskId"])["metadata"]["name"] == "from json"


def test_cancel_then_rerun(taskq, tmp_path, task_queue_id):
    task_id = taskq("create", _task_file(tmp_path, task_queue_id)).stdout.strip()
    cancelled = taskq("cancel", task_id, "--json")
    assert cancelled.status == 0 and cancelled.json()["status"]["state"] == "exception"
    rerun = taskq("rerun", task_id)
    assert rerun.status == 0 and rerun.stdout.strip() == f"{task_id} pending"


def test_a_wrong_command_line_is_one_line_too(taskq, tmp_path):
    said = {}
    for args in (("status", "not-a-task-id"), ("log",), ("listen", "--task", "x" * 22)):
        wrong = taskq(*args)
        assert wrong.status == 2 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
        assert wrong.stderr.startswith(f"error: taskq {args[0]}: ") and "--help" in wrong.stderr
        said[args[0]] = wrong.stderr
    assert "'not-a-task-id' is not a taskId: a taskId is a slugid, 22 characters" in said["status"]
    bad = tmp_path / "bad.yml"
    bad.write_text("payload:\n  command: [[echo, hi]\n  maxRunTime: 60\n")
    refused = taskq("create", str(bad), "--queue", "proj/linux")
    assert refused.status == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.startswith(f"error: {bad}: line 3, column 3: expected ',' or ']'")


def test_errors_are_one_line_with_the_servers_code_and_a_non_zero_status(taskq, tmp_path, task_queue_id):
    missing = taskq("status", taskcluster.slugId())
    assert missing.status == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: ResourceNotFound: ") and len(missing.stderr.strip().splitlines()) == 1
    invalid = taskq("create", _task_file(tmp_path, task_queue_id, priority="not-a-priority"))
    assert invalid.status == 1 and invalid.stderr.startswith("error: InputValidationError: ")
    assert len(invalid.stderr.strip().splitlines()) == 1
    unreadable = taskq("create", str(tmp_path / "nowhere.yml"))
    assert unreadable.status == 1 and "nowhere.yml" in unreadable.stderr
    assert len(unreadable.stderr.strip().splitlines()) == 1


def _work(queue, task_queue_id: str, failing: set[str], stop: threading.Event) -> None:
    """A stand-in worker: completes every task it claims, fails those named in `failing`."""
    while not stop.is_set():
        claims = queue.claimWork(task_queue_id, {"workerGroup": "tests", "workerId": "cli", "tasks": 4})
        for claim in claims["tasks"]:
            task_id, run_id = claim["status"]["taskId"], str(claim["runId"])
            name = claim["task"]["metadata"]["name"]
            (queue.reportFailed if name in failing else queue.reportCompleted)(task_id, run_id)


def _graph_file(tmp_path, task_queue_id: str) -> str:
    node = lambda *requires: {"requires": list(requires), "reruns": 0,  # noqa: E731
                              "task": {"taskQueueId": task_queue_id, "payload": {"command": [["true"]]}}}
    path = tmp_path / "graph.yml"
    path.write_text(yaml.safe_dump({"tasks": {"build": node(), "test": node("build"), "lint": node("build"),
                                              "ship": node("test", "lint")}}))
    return str(path)


class _Worker:
    def __init__(self, queue, task_queue_id, failing=()):
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=_work, args=(queue, task_queue_id, set(failing), self.stopping))
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)  # its last claimWork ends within CLAIM_WORK_WAIT_SECONDS


def test_submit_graph_and_watch_it_to_the_end(taskq, queue, tmp_path, task_queue_id):
    worker = _Worker(queue, task_queue_id)
    try:
        watched = taskq("submit-graph", _graph_file(tmp_path, task_queue_id), "--watch", "--json", timeout=120)
    finally:
        worker.stop()
    assert watched.status == 0, watched.stderr
    lines = watched.json_lines()
    assert lines[-1]["graphState"] == "finished" and lines[-1]["counts"]["completed"] == 4
    assert lines[-1]["total"] == 4 == lines[-1]["resolved"]
    graph_id = lines[-1]["taskGroupId"]
    listed = taskq("group", graph_id)
    assert listed.status == 0 and len(listed.stdout.splitlines()) == 4
    assert sorted(line.split()[2] for line in listed.stdout.splitlines()) == ["build", "lint", "ship", "test"]
    assert "4 tasks (graph finished): completed 4" in listed.stderr


def test_watch_shows_progress_and_fails_when_the_graph_blocks(taskq, queue, tmp_path, task_queue_id):
    submitted = taskq("submit-graph", _graph_file(tmp_path, task_queue_id))
    assert submitted.status == 0, submitted.stderr
    graph_id = submitted.stdout.strip()
    worker = _Worker(queue, task_queue_id, failing={"lint"})
    try:
        watched = taskq("watch", graph_id, timeout=120)
    finally:
        worker.stop()
    assert watched.status == 1
    # Without a terminal, each change of the counts is one line of progress on stderr.
    progress = [line for line in watched.stderr.splitlines() if line.startswith(graph_id)]
    assert progress[-1].startswith(f"{graph_id}: ended: ")
    assert "failed 1" in progress[-1] and "unscheduled 1" in progress[-1]
    assert any(" blocked" in line for line in progress)
    # The task that blocks it is named, as the scheduler's inspect knows it.
    lint = next(entry["status"]["taskId"] for entry in queue.listTaskGroup(graph_id)["tasks"]
                if entry["task"]["metadata"]["name"] == "lint")
    assert progress[-1].endswith(f"; blocked by lint ({lint}, failed); 1 task(s) cannot run")
    listed = taskq("group", graph_id)
    assert f"blocked by lint ({lint}, failed); 1 task(s) cannot run" in listed.stderr
    assert taskq("group", graph_id, "--json").json()["blockedBy"] == [{"taskId": lint, "name": "lint",
                                                                       "state": "failed"}]


def test_a_plain_groups_blocker_is_named_too(taskq, queue, tmp_path, task_queue_id):
    group_id = taskcluster.slugId()
    first = taskq("create", _task_file(tmp_path, task_queue_id, "compile.yml"), "--group", group_id).stdout.strip()
    after = taskq("create", _task_file(tmp_path, task_queue_id, "package.yml", dependencies=[first]), "--group",
                  group_id)
    assert after.status == 0, after.stderr
    claim = queue.claimWork(task_queue_id, {"workerGroup": "tests", "workerId": "cli", "tasks": 1})["tasks"][0]
    queue.reportFailed(first, str(claim["runId"]))
    listed = taskq("group", group_id)
    assert listed.status == 0 and len(listed.stdout.splitlines()) == 2   # --group put both in one group
    assert f"blocked by compile ({first}, failed); 1 task(s) cannot run" in listed.stderr


def test_watch_a_plain_group_ends_once_nothing_can_run(taskq, queue, tmp_path, task_queue_id):
    group_id = taskcluster.slugId()
    first = taskq("create", _task_file(tmp_path, task_queue_id, taskGroupId=group_id)).stdout.strip()
    second = taskq("create", _task_file(tmp_path, task_queue_id, taskGroupId=group_id, dependencies=[first]))
    assert second.status == 0, second.stderr
    worker = _Worker(queue, task_queue_id)
    try:
        watched = taskq("watch", group_id, "--json", timeout=60)
    finally:
        worker.stop()
    assert watched.status == 0, watched.stderr
    assert watched.json_lines()[-1]["counts"]["completed"] == 2
    eventually(lambda: queue.status(first)["status"]["state"] == "completed")
