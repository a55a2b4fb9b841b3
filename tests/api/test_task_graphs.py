"""The task-graph scheduler (seed 000) over raw HTTP, with its tasks run through the official
Queue client as a worker would run them.

Responses (see shared/services/scheduler/task_graphs.py):
- PUT /task-graph/<id>, GET /status, POST /extend: `{"status": {taskGraphId, schedulerId, state}}`;
- GET /inspect: `{taskGraphId, state, routing, blockedBy, unreachable,
  tasks: [{label, taskId, state, requires, dependents, reruns, rerunsLeft}]}`.
Reruns, `blocked` and `finished` come from the host's asynchronous 'task resolved' handler,
so they are awaited with a bounded poll.
"""

from __future__ import annotations

import pytest
import requests
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso
from shared.domain.task_graph import task_id_for
from tests.api.test_dependencies import wait_for_state
from tests.conftest import eventually
from tests.conftest import make_task

SCHEDULER_ID = "task-graph-scheduler"


class Scheduler:
    """The scheduler API at `{root_url}/api/scheduler/v1`, over plain HTTP."""

    def __init__(self, root_url: str, auth) -> None:
        self.base = f"{root_url}/api/scheduler/v1/task-graph"
        self.auth = auth

    def create(self, graph_id: str, request: dict) -> requests.Response:
        return requests.put(f"{self.base}/{graph_id}", json=request, timeout=60, auth=self.auth)

    def extend(self, graph_id: str, request: dict) -> requests.Response:
        return requests.post(f"{self.base}/{graph_id}/extend", json=request, timeout=60, auth=self.auth)

    def status(self, graph_id: str) -> requests.Response:
        return requests.get(f"{self.base}/{graph_id}/status", timeout=30, auth=self.auth)

    def inspect(self, graph_id: str) -> requests.Response:
        return requests.get(f"{self.base}/{graph_id}/inspect", timeout=30, auth=self.auth)

    def state(self, graph_id: str) -> str:
        return ok(self.status(graph_id))["status"]["state"]

    def tasks(self, graph_id: str) -> dict[str, dict]:
        """The inspected tasks by label."""
        return {entry["label"]: entry for entry in ok(self.inspect(graph_id))["tasks"]}

    def wait_for_state(self, graph_id: str, expected: str) -> None:
        eventually(lambda: self.state(graph_id) == expected, 30, 0.2, message=f"graph {graph_id} to be {expected}")


@pytest.fixture
def scheduler(server) -> Scheduler:
    return Scheduler(server.root_url, server.auth)


def ok(response: requests.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def graph(task_queue_id: str, **nodes) -> dict:
    """`graph(q, build={}, test={"requires": ["build"]})`: a request with a task per label;
    a node's "task" entry holds overrides of the default task definition."""
    return {"tasks": {label: {**node, "task": make_task(task_queue_id, **node.get("task", {}))}
                      for label, node in nodes.items()}}


def run(queue, task_queue_id: str, labels: dict[str, str], outcome: str = "completed") -> list[str]:
    """Claim everything pending on the queue and resolve it; returns the labels, sorted."""
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 32})["tasks"]
    for claim in claims:
        report = queue.reportCompleted if outcome == "completed" else queue.reportFailed
        report(claim["status"]["taskId"], str(claim["runId"]))
    return sorted(labels[claim["status"]["taskId"]] for claim in claims)


def label_names(scheduler: Scheduler, graph_id: str) -> dict[str, str]:
    return {entry["taskId"]: label for label, entry in scheduler.tasks(graph_id).items()}


def test_subs_are_replaced_by_task_ids_and_the_graph_finishes(scheduler, queue, task_queue_id):
    graph_id = new_slugid()
    artifact = {"$subs": "taskId:build"}
    request = {"routing": "ci", **graph(
        task_queue_id, build={},
        test={"requires": ["build"], "task": {"payload": {"artifact": artifact, "inputs": [artifact, "x"]}}})}
    created = ok(scheduler.create(graph_id, request))
    assert created == {"status": {"taskGraphId": graph_id, "schedulerId": SCHEDULER_ID, "state": "running"}}

    tasks = scheduler.tasks(graph_id)
    build, test = tasks["build"]["taskId"], tasks["test"]["taskId"]
    definition = queue.task(test)
    assert definition["payload"] == {"artifact": build, "inputs": [build, "x"]}
    assert definition["dependencies"] == [build]
    assert (definition["taskGroupId"], definition["schedulerId"]) == (graph_id, SCHEDULER_ID)
    assert "ci" in definition["routes"]
    assert queue.task(build)["payload"] == make_task(task_queue_id)["payload"]
    assert (tasks["test"]["requires"], tasks["build"]["dependents"]) == (["build"], ["test"])
    assert [tasks[label]["state"] for label in ("build", "test")] == ["pending", "unscheduled"]
    inspected = ok(scheduler.inspect(graph_id))
    assert (inspected["routing"], inspected["blockedBy"], inspected["unreachable"]) == ("ci", [], [])

    labels = {build: "build", test: "test"}
    assert run(queue, task_queue_id, labels) == ["build"]
    assert scheduler.state(graph_id) == "running"
    wait_for_state(queue, test, "pending")
    assert run(queue, task_queue_id, labels) == ["test"]
    scheduler.wait_for_state(graph_id, "finished")
    assert {label: entry["state"] for label, entry in scheduler.tasks(graph_id).items()} == \
        {"build": "completed", "test": "completed"}


def test_the_same_graph_again_is_the_same_answer_and_a_different_one_conflicts(scheduler, task_queue_id):
    graph_id = new_slugid()
    request = graph(task_queue_id, a={}, b={"requires": ["a"]})
    first = ok(scheduler.create(graph_id, request))
    again = scheduler.create(graph_id, request)
    assert again.status_code == 200 and again.json() == first
    assert set(scheduler.tasks(graph_id)) == {"a", "b"}

    different = scheduler.create(graph_id, graph(task_queue_id, a={}))
    assert different.status_code == 409 and different.json()["code"] == "RequestConflict"
    assert graph_id in different.json()["message"]
    assert set(scheduler.tasks(graph_id)) == {"a", "b"}


def test_an_empty_routing_adds_no_route_and_a_long_one_is_400(scheduler, queue, task_queue_id):
    graph_id = new_slugid()
    ok(scheduler.create(graph_id, {"routing": "", **graph(task_queue_id, a={})}))
    assert queue.task(scheduler.tasks(graph_id)["a"]["taskId"])["routes"] == []
    assert ok(scheduler.inspect(graph_id))["routing"] == ""

    too_long = scheduler.create(new_slugid(), {"routing": "x" * 11, **graph(task_queue_id, a={})})
    assert too_long.status_code == 400 and "routing" in too_long.json()["message"]


@pytest.mark.parametrize("nodes, named", [
    pytest.param({"a": {"requires": ["b"]}, "b": {"requires": ["a"]}, "c": {}}, ["a", "b"], id="cycle"),
    pytest.param({"a": {"requires": ["ghost"]}}, ["tasks.a.requires", "ghost"], id="unknown-label"),
    pytest.param({"a": {"task": {"payload": {"x": {"$subs": "taskId:ghost"}}}}}, ["tasks.a.task.payload.x", "ghost"],
                 id="unknown-subs"),
    pytest.param({"a": {}, "b": {"task": {"retries": 100}}}, ["tasks.b.task.retries"], id="bad-task-definition"),
    pytest.param({"a": {}, "b": {"task": {"deadline": "yesterday"}}}, ["tasks.b.task.deadline"], id="bad-deadline"),
])
def test_a_bad_graph_is_400_naming_the_problem_and_creates_nothing(scheduler, queue, task_queue_id, nodes, named):
    graph_id = new_slugid()
    response = scheduler.create(graph_id, graph(task_queue_id, **nodes))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "InputValidationError"
    assert all(name in body["message"] for name in named), body["message"]
    assert_nothing_created(scheduler, queue, task_queue_id, graph_id, nodes)


def test_a_graph_task_depending_on_an_unknown_task_creates_nothing(scheduler, queue, task_queue_id):
    """A graph task's own `dependencies` may name tasks outside the graph; an unknown one is a
    bad task definition like any other."""
    graph_id = new_slugid()
    missing = new_slugid()
    nodes = {"a": {}, "b": {"requires": ["a"], "task": {"dependencies": [missing]}}}
    response = scheduler.create(graph_id, graph(task_queue_id, **nodes))
    assert response.status_code == 400, response.text
    assert missing in response.json()["message"]
    assert_nothing_created(scheduler, queue, task_queue_id, graph_id, nodes)


def assert_nothing_created(scheduler: Scheduler, queue, task_queue_id: str, graph_id: str, nodes: dict) -> None:
    for response in (scheduler.status(graph_id), scheduler.inspect(graph_id)):
        assert response.status_code == 404 and response.json()["code"] == "ResourceNotFound"
    for label in nodes:   # a graph's taskIds are fixed by (graph, label): none of them exists
        with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
            queue.status(task_id_for(graph_id, label))
        assert error.value.status_code == 404
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.getTaskGroup(graph_id)
    assert error.value.status_code == 404
    assert queue.pendingTasks(task_queue_id)["pendingTasks"] == 0


def test_a_failed_task_with_reruns_left_is_rerun(scheduler, queue, task_queue_id):
    graph_id = new_slugid()
    ok(scheduler.create(graph_id, graph(task_queue_id, flaky={"reruns": 2}, after={"requires": ["flaky"]})))
    labels = label_names(scheduler, graph_id)
    flaky = scheduler.tasks(graph_id)["flaky"]
    assert (flaky["reruns"], flaky["rerunsLeft"]) == (2, 2)

    assert run(queue, task_queue_id, labels, "failed") == ["flaky"]
    status = wait_for_state(queue, flaky["taskId"], "pending")
    assert [(run["state"], run["reasonCreated"]) for run in status["runs"]] == [("failed", "scheduled"),
                                                                                ("pending", "rerun")]
    assert scheduler.tasks(graph_id)["flaky"]["rerunsLeft"] == 1
    assert scheduler.state(graph_id) == "running"

    assert run(queue, task_queue_id, labels) == ["flaky"]
    wait_for_state(queue, scheduler.tasks(graph_id)["after"]["taskId"], "pending")
    assert run(queue, task_queue_id, labels) == ["after"]
    scheduler.wait_for_state(graph_id, "finished")
    tasks = scheduler.tasks(graph_id)
    assert (tasks["flaky"]["rerunsLeft"], tasks["after"]["rerunsLeft"]) == (1, 0)
    assert len(queue.status(tasks["flaky"]["taskId"])["status"]["runs"]) == 2
    assert len(queue.status(tasks["after"]["taskId"])["status"]["runs"]) == 1


def test_a_failure_with_no_reruns_left_blocks_the_graph(scheduler, queue, task_queue_id):
    graph_id = new_slugid()
    ok(scheduler.create(graph_id, graph(task_queue_id, flaky={"reruns": 1}, after={"requires": ["flaky"]},
                                        last={"requires": ["after"]})))
    labels = label_names(scheduler, graph_id)
    flaky = scheduler.tasks(graph_id)["flaky"]["taskId"]
    assert run(queue, task_queue_id, labels, "failed") == ["flaky"]
    wait_for_state(queue, flaky, "pending")                                      # its one rerun
    assert scheduler.state(graph_id) == "running"
    assert run(queue, task_queue_id, labels, "failed") == ["flaky"]
    scheduler.wait_for_state(graph_id, "blocked")

    inspected = ok(scheduler.inspect(graph_id))
    assert inspected["state"] == "blocked"
    assert inspected["blockedBy"] == ["flaky"] and inspected["unreachable"] == ["after", "last"]
    tasks = {entry["label"]: entry for entry in inspected["tasks"]}
    assert (tasks["flaky"]["state"], tasks["flaky"]["rerunsLeft"]) == ("failed", 0)
    assert (tasks["after"]["state"], tasks["last"]["state"]) == ("unscheduled", "unscheduled")
    assert len(queue.status(flaky)["status"]["runs"]) == 2                       # no third run
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 4})["tasks"] == []

    # Rerun by hand, the blocker no longer blocks; once it completes, the graph runs to the end.
    queue.rerunTask(flaky)
    assert scheduler.state(graph_id) == "running"
    inspected = ok(scheduler.inspect(graph_id))
    assert (inspected["state"], inspected["blockedBy"], inspected["unreachable"]) == ("running", [], [])
    assert run(queue, task_queue_id, labels) == ["flaky"]
    for label in ("after", "last"):
        wait_for_state(queue, scheduler.tasks(graph_id)[label]["taskId"], "pending")
        assert run(queue, task_queue_id, labels) == [label]
    scheduler.wait_for_state(graph_id, "finished")


def test_extend_while_running_adds_tasks_that_run_after_what_they_require(scheduler, queue, task_queue_id):
    graph_id = new_slugid()
    ok(scheduler.create(graph_id, graph(task_queue_id, build={})))
    build = scheduler.tasks(graph_id)["build"]["taskId"]
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": 4})["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [build]            # build is running

    extension = graph(task_queue_id, deploy={"requires": ["build"], "task": {"payload": {"of": {"$subs": "taskId:build"}}}},
                      notify={"requires": ["deploy"]})
    extended = ok(scheduler.extend(graph_id, extension))
    assert extended == {"status": {"taskGraphId": graph_id, "schedulerId": SCHEDULER_ID, "state": "running"}}
    assert ok(scheduler.extend(graph_id, extension)) == extended                  # repeating it is a no-op
    tasks = scheduler.tasks(graph_id)
    assert set(tasks) == {"build", "deploy", "notify"}
    deploy, notify = tasks["deploy"]["taskId"], tasks["notify"]["taskId"]
    assert tasks["build"]["dependents"] == ["deploy"] and tasks["deploy"]["requires"] == ["build"]
    assert (tasks["deploy"]["state"], tasks["notify"]["state"]) == ("unscheduled", "unscheduled")
    assert queue.task(deploy)["payload"] == {"of": build} and queue.task(deploy)["taskGroupId"] == graph_id

    clash = scheduler.extend(graph_id, graph(task_queue_id, build={}))
    assert clash.status_code == 400 and "build" in clash.json()["message"]

    queue.reportCompleted(build, "0")
    labels = label_names(scheduler, graph_id)
    deploy_status = wait_for_state(queue, deploy, "pending")
    build_resolved = parse_iso(queue.status(build)["status"]["runs"][0]["resolved"])
    assert parse_iso(deploy_status["runs"][0]["scheduled"]) >= build_resolved
    assert run(queue, task_queue_id, labels) == ["deploy"]
    wait_for_state(queue, notify, "pending")
    assert scheduler.state(graph_id) == "running"
    assert run(queue, task_queue_id, labels) == ["notify"]
    scheduler.wait_for_state(graph_id, "finished")


def test_unknown_graphs_are_404(scheduler, task_queue_id):
    graph_id = new_slugid()
    for response in (scheduler.status(graph_id), scheduler.inspect(graph_id),
                     scheduler.extend(graph_id, graph(task_queue_id, a={}))):
        assert response.status_code == 404 and response.json()["code"] == "ResourceNotFound"


def test_a_graph_submitted_twice_creates_none_of_its_reused_tasks_the_second_time(server, scheduler, queue,
                                                                                  task_queue_id):
    """Beyond Taskcluster (`reuse.index`, taskgraph's index-search): the toolchain is indexed
    by its route when it completes; the same graph submitted again takes that task's id for
    the label and creates no task for it; the official Index client finds what was reused."""
    namespace = f"proj.t{new_slugid()[:8].lower().replace('-', 'x').replace('_', 'y')}.toolchain"
    request = graph(task_queue_id,
                    toolchain={"reuse": {"index": [f"{namespace}.missing", namespace]},
                               "task": {"routes": [f"index.{namespace}"]}},
                    build={"requires": ["toolchain"], "task": {"payload": {"tc": {"$subs": "taskId:toolchain"}}}})
    first, second = new_slugid(), new_slugid()
    ok(scheduler.create(first, request))
    assert ok(scheduler.inspect(first))["reused"] == []
    labels = label_names(scheduler, first)
    assert run(queue, task_queue_id, labels) == ["toolchain"]
    wait_for_state(queue, scheduler.tasks(first)["build"]["taskId"], "pending")
    assert run(queue, task_queue_id, labels) == ["build"]
    scheduler.wait_for_state(first, "finished")
    toolchain = scheduler.tasks(first)["toolchain"]["taskId"]
    index = taskcluster.Index({"rootUrl": server.root_url, "maxRetries": 0})
    eventually(lambda: _indexed(index, namespace) == toolchain, message="the toolchain indexed")

    ok(scheduler.create(second, request))
    inspected = ok(scheduler.inspect(second))
    assert inspected["reused"] == [{"label": "toolchain", "taskId": toolchain, "namespace": namespace}]
    assert [entry["label"] for entry in inspected["tasks"]] == ["build"]
    assert queue.listTaskGroup(second)["tasks"][0]["status"]["taskId"] == scheduler.tasks(second)["build"]["taskId"]
    assert len(queue.listTaskGroup(second)["tasks"]) == 1
    assert rest_status(queue.status, task_id_for(second, "toolchain")) == 404
    build = scheduler.tasks(second)["build"]["taskId"]
    assert queue.task(build)["payload"]["tc"] == toolchain and queue.status(build)["status"]["state"] == "pending"
    assert run(queue, task_queue_id, label_names(scheduler, second)) == ["build"]
    scheduler.wait_for_state(second, "finished")


def _indexed(index, namespace: str) -> str | None:
    try:
        return index.findTask(namespace)["taskId"]
    except taskcluster.TaskclusterRestFailure:
        return None


def rest_status(call, *args) -> int:
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        call(*args)
    return caught.value.status_code
