"""A task graph run to completion by no-op workers through one host or several (Function App
instances on one storage account), while hosts are killed; and the checks of its end state:
nothing lost, nothing done twice, every state change announced on the event bus and none
that did not happen. `test_host_killed` and `test_many_hosts` share it."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Callable

import requests
import taskcluster

from shared.domain.ids import new_slugid
from tests.conftest import Server, eventually, make_task, shared_broker
from tests.events.amqp_consumer import Consumer

FLAKY_EVERY = 10            # every 10th label fails its first run; the graph reruns it
UNAVAILABLE = (taskcluster.TaskclusterConnectionError, requests.ConnectionError)
EXCHANGES = ("task-defined", "task-pending", "task-running", "task-completed", "task-failed", "task-exception")


def scenario(task_queue_id: str, rng: random.Random, tasks: int, layers: int) -> dict:
    """Layers of tasks, each requiring one to three tasks of the layer before."""
    width = tasks // layers
    labels = [[f"l{layer}-t{index}" for index in range(width)] for layer in range(layers)]
    graph = {}
    for depth, layer in enumerate(labels):
        for label in layer:
            requires = rng.sample(labels[depth - 1], rng.randint(1, 3)) if depth else []
            flaky = len(graph) % FLAKY_EVERY == FLAKY_EVERY - 1
            graph[label] = {"requires": requires, "reruns": 1 if flaky else 0,
                            "task": make_task(task_queue_id, retries=20, metadata={
                                "name": label, "description": "flaky" if flaky else "steady",
                                "owner": "tests@example.com", "source": "https://example.com/kill"})}
    return {"tasks": graph}


def listen(task_queue_id: str) -> Consumer:
    """A consumer of every task event of the queue, bound before anything happens."""
    provisioner, worker_type = task_queue_id.split("/")
    return Consumer(shared_broker().url, [
        {"exchange": f"exchange/taskcluster-queue/v1/{name}",
         "routingKeyPattern": f"primary.*.*.*.*.{provisioner}.{worker_type}.#"} for name in EXCHANGES])


class Workers:
    """No-op workers: a flaky task fails its first run, everything else completes. Worker
    `n` starts at host `n % len(hosts)` and moves to the next host while its own does not
    answer, as a load balancer sends callers to the instances that are up."""

    def __init__(self, hosts: list[Server], task_queue_id: str) -> None:
        self.hosts, self.task_queue_id = hosts, task_queue_id
        self.claims: list[tuple[str, int, str]] = []
        self.server_errors: list[str] = []      # 5xx answers: a caller must never see one
        self.served_by: Counter[int] = Counter()  # runs claimed, by the host that handed them out
        self.lock = threading.Lock()
        self.done = threading.Event()

    def start(self, count: int) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.run, args=(number,)) for number in range(count)]
        for thread in threads:
            thread.start()
        return threads

    def run(self, number: int) -> None:
        host = number % len(self.hosts)
        while not self.done.is_set():
            queue = self.hosts[host].client()
            try:
                answer = queue.claimWork(self.task_queue_id, {"workerGroup": "kill", "workerId": f"w{number}",
                                                              "tasks": 4})
            except UNAVAILABLE:
                host = (host + 1) % len(self.hosts)
                time.sleep(0.3)
                continue
            except taskcluster.TaskclusterRestFailure as error:
                self.failed(error)
                time.sleep(0.3)
                continue
            for claim in answer["tasks"]:
                with self.lock:
                    self.claims.append((claim["status"]["taskId"], claim["runId"], f"w{number}"))
                    self.served_by[host] += 1
                host = self.report(host, claim)

    def report(self, host: int, claim: dict) -> int:
        """Resolve the claimed run (through another host if this one is down); the host used."""
        task_id, run_id = claim["status"]["taskId"], str(claim["runId"])
        fail = claim["task"]["metadata"]["description"] == "flaky" and not any(
            run["state"] == "failed" for run in claim["status"]["runs"])
        while not self.done.is_set():
            queue = self.hosts[host].client()
            try:
                (queue.reportFailed if fail else queue.reportCompleted)(task_id, run_id)
                return host
            except UNAVAILABLE:
                host = (host + 1) % len(self.hosts)   # report again through a host that is up
                time.sleep(0.3)
            except taskcluster.TaskclusterRestFailure as error:
                if error.status_code == 409:
                    return host                       # the claim expired while its host was down
                self.failed(error)
                time.sleep(0.3)
        return host

    def failed(self, error: taskcluster.TaskclusterRestFailure) -> None:
        if error.status_code >= 500:
            with self.lock:
                self.server_errors.append(f"{error.status_code}: {str(error)[:300]}")

    def stop(self, threads: list[threading.Thread]) -> None:
        self.done.set()
        for thread in threads:
            thread.join(timeout=60)


def run_graph(through: Server, hosts: list[Server], task_queue_id: str, tasks: int, layers: int, seed: int,
              workers: int, meanwhile: Callable[[Workers], None] | None = None) -> tuple[list[dict], Workers]:
    """A graph of `tasks` tasks in `layers` layers, created through `through` while
    `workers` workers across `hosts` claim from the start and `meanwhile(workers)` runs
    beside them (killing hosts); its end state checked through `through` once finished.
    Its runs, and the workers (what they claimed, through which host)."""
    announced = listen(task_queue_id)
    graph, graph_id = scenario(task_queue_id, random.Random(seed), tasks, layers), new_slugid()
    crew = Workers(hosts, task_queue_id)
    threads = crew.start(workers)
    beside = threading.Thread(target=meanwhile, args=(crew,)) if meanwhile else None
    if beside:
        beside.start()                                 # a kill may land during creation
    try:
        put_graph(through, graph_id, graph)
        if beside:
            beside.join(timeout=300)
        inspect = wait_until_finished(through, graph_id, timeout=1200)  # a bound on a hang, not a speed test
    finally:
        crew.stop(threads)
    runs = check_end_state(through, graph, inspect, crew, announced, task_queue_id)
    announced.close()
    assert crew.server_errors == []
    return runs, crew


def put_graph(server: Server, graph_id: str, graph: dict) -> None:
    """Create the graph, again and again until an answer arrives: creation is idempotent."""
    url = f"{server.root_url}/api/scheduler/v1/task-graph/{graph_id}"
    while True:
        try:
            response = requests.put(url, json=graph, timeout=120, auth=server.auth)
            if response.status_code == 200:
                return
            assert response.status_code >= 500, response.text
        except requests.ConnectionError:
            pass
        time.sleep(0.3)


def wait_until_finished(server: Server, graph_id: str, timeout: float) -> dict:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        try:
            inspect = requests.get(f"{server.root_url}/api/scheduler/v1/task-graph/{graph_id}/inspect", timeout=30,
                                   auth=server.auth)
            if inspect.status_code == 200 and inspect.json()["state"] == "finished":
                return inspect.json()
        except requests.ConnectionError:
            pass
        time.sleep(1)
    raise AssertionError(f"graph {graph_id} did not finish in {timeout} s; host log: {server.log_path}")


def check_end_state(server: Server, graph: dict, inspect: dict, workers: Workers, announced: Consumer,
                    task_queue_id: str) -> list[dict]:
    """Everything the run must have come to, read through `server`: every task completed
    (after a rerun for a flaky one, a retry for a claim that expired while its host was
    down), none scheduled before what it requires, no run claimed twice, no hint left, every
    state change announced once or more and nothing else announced. The runs, for figures."""
    queue = server.client()
    ids = {entry["label"]: entry["taskId"] for entry in inspect["tasks"]}
    assert set(ids) == set(graph["tasks"])
    statuses = {label: queue.status(task_id)["status"] for label, task_id in ids.items()}
    for label, status in statuses.items():
        check_runs(label, status, flaky=graph["tasks"][label]["reruns"] == 1)
    check_dependency_order(graph, statuses)

    per_run = Counter((task_id, run_id) for task_id, run_id, _ in workers.claims)
    assert [run for run, count in per_run.items() if count > 1] == []          # no run claimed twice
    claimed = set(per_run)
    for status in statuses.values():                   # a run no worker heard of can only have expired
        for run in status["runs"]:
            if "workerId" in run and (status["taskId"], run["runId"]) not in claimed:
                assert run["reasonResolved"] == "claim-expired", (status["taskId"], run)
    # A kill between a task's write and its hint's removal leaves a stale hint, and so does a
    # sweep's write that lost to a worker's (its hint goes before the write): the next claimer
    # that meets one drops it, and finds nothing to claim. A sweep still running may leave
    # one more, so claimers pass until the count is back to 0.
    def drained() -> bool:
        assert queue.claimWork(task_queue_id, {"workerGroup": "kill", "workerId": "last", "tasks": 32})["tasks"] == []
        return queue.pendingTasks(task_queue_id)["pendingTasks"] == 0
    eventually(drained, timeout=60, interval=1, message="no hint left once claimers passed")
    # Events a kill left in an outbox come out when their task is next touched, or by the
    # claim row or repair intent of its resolution (a minute later at most, here).
    expected = announcements(statuses.values())
    eventually(lambda: heard(announced) >= expected, timeout=240, interval=1,
               message=lambda: f"every change announced (missing: {sorted(expected - heard(announced))[:20]})")
    assert heard(announced) == expected
    return [run for status in statuses.values() for run in status["runs"]]


def announcements(statuses) -> set[tuple[str, str, int | None]]:
    """What Taskcluster announces for tasks that ended as `statuses`: (exchange, taskId, runId)."""
    out = set()
    for status in statuses:
        task_id, runs = status["taskId"], status["runs"]
        out.add(("task-defined", task_id, None))
        for run in runs:
            out.add(("task-pending", task_id, run["runId"]))
            if "workerId" in run:
                out.add(("task-running", task_id, run["runId"]))
            out.add((f"task-{run['state']}", task_id, run["runId"]))   # a retried exception too
    return out


def heard(consumer: Consumer) -> set[tuple[str, str, int | None]]:
    return {(message.name, message.body["status"]["taskId"], message.body.get("runId"))
            for message in consumer.drain()}


def check_runs(label: str, status: dict, flaky: bool) -> None:
    """Completed last; a failure only for a flaky task (then rerun); every other early end
    a claim that expired while its host was down, followed by a retry."""
    runs = status["runs"]
    assert status["state"] == "completed" and runs[-1]["state"] == "completed", (label, runs)
    assert [run["runId"] for run in runs] == list(range(len(runs))), (label, runs)
    assert sum(run["state"] == "failed" for run in runs) == (1 if flaky else 0), (label, runs)
    for run, following in zip(runs, runs[1:]):
        if run["state"] == "failed":
            assert following["reasonCreated"] == "rerun", (label, runs)
        else:
            assert (run["state"], run["reasonResolved"], following["reasonCreated"]) == \
                ("exception", "claim-expired", "retry"), (label, runs)


def check_dependency_order(graph: dict, statuses: dict) -> None:
    """No task was scheduled before every task it requires had completed."""
    for label, node in graph["tasks"].items():
        first_scheduled = statuses[label]["runs"][0]["scheduled"]
        for required in node["requires"]:
            assert first_scheduled >= statuses[required]["runs"][-1]["resolved"], (label, required)
