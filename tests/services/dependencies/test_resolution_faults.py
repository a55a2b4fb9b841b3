"""Crashes inside the resolution handler: whatever point the process dies at, the redelivered
event or the claim expiry sweep finishes the work, every task runs exactly once (or exactly
its reruns), and further deliveries of the same events change nothing.

The services run in this process on a real Azurite. A fault wraps one REAL method of this
services instance (pytest's monkeypatch): armed only while the handler runs, it fires once
per handler call, either before the wrapped write (the write never happens) or after it
(the write happened and the process 'died' before the next one). Three ways to recover:
- "in process": the handler runs in the process that resolved the task, right after the
  write (as in production for all but long fan-outs), and the process dies there, before
  the call answers (the dependents) or after (the group and graph);
- "redeliver": the resolution is announced instead (as a long fan-out is) and the
  queue-triggered handler dies: the message is left undeleted and the real storage queue
  delivers it again;
- "sweep": the same, but the message is lost too.
After "in process" and "sweep" only the claimed run's row (which the handler removes last)
is left, for the claim expiry sweep to announce again once it is due.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import utcnow
from shared.services.dependencies.resolution_messages import Resolution
from shared.services.wiring import Services
from tests.conftest import build_services
from tests.services.dependencies.test_dependency_tracker import create, deliver_events
from tests.services.scheduler.test_task_graphs import graph

HOLD = timedelta(seconds=1)   # a crashed message becomes visible again this soon


class Crash(BaseException):
    """The process died here (not an Exception: nothing in the process may carry on)."""


@dataclass
class Fault:
    """Makes `owner.name` crash before or after its real work, once per handler call."""

    owner: object
    name: str
    when: str                      # "before": the write never happens; "after": it did
    armed: bool = False
    fired: list = field(default_factory=list)

    def install(self, monkeypatch) -> None:
        real = getattr(self.owner, self.name)

        def wrapper(*args, **kwargs):
            if not self.armed:
                return real(*args, **kwargs)
            self.armed = False     # one crash per handler call; the other threads carry on
            self.fired.append(args)
            if self.when == "before":
                raise Crash(f"crash before {self.name}")
            real(*args, **kwargs)
            raise Crash(f"crash after {self.name}")
        monkeypatch.setattr(self.owner, self.name, wrapper)


# Where the handler can die: (owner of the method on a services instance, method, when).
FAULT_POINTS = {
    "before dependencies.task_resolved": (lambda s: s.dependency_resolver.dependency_tracker, "task_resolved", "before"),
    "after dependencies.task_resolved": (lambda s: s.dependency_resolver.dependency_tracker, "task_resolved", "after"),
    # Inside the dependency tracker's writes: a requirement row deleted, the dependent not
    # yet checked or scheduled (the write that would otherwise be lost).
    "after one requirement deleted": (lambda s: s.dependency_tracker.requirement_table, "satisfy", "after"),
    "before a ready dependent is scheduled": (lambda s: s.dependency_tracker, "_schedule", "before"),
    "after graphs.task_failed": (lambda s: s.dependency_resolver.task_graphs, "task_failed", "after"),
    # Inside the graph's writes: a rerun counted but not started; a label closed (with its
    # task's membership of the group) but the graph's state and the group's not updated.
    "after a graph rerun is counted": (lambda s: s.task_graphs.graph_table, "save_label", "after"),
    "after a graph label and its membership are counted down": (
        lambda s: s.dependency_resolver.task_groups.group_table, "member_completed_label", "after"),
    "after graphs.label_completed": (lambda s: s.dependency_resolver.task_graphs, "label_completed", "after"),
    "after groups.member_resolved": (lambda s: s.dependency_resolver.task_groups, "member_resolved", "after"),
    "before the claimed run's row is removed": (lambda s: s.dependency_resolver.claim_table, "remove_soon", "before"),
    # A completed task's index entry (task `a` has an index route): not written yet.
    "before the index entry is written": (lambda s: s.dependency_resolver.indexer.table, "insert", "before"),
}


@dataclass
class Workload:
    """A chain and a diamond of plain tasks in one task group, and a task graph whose
    `flaky` task fails once and is rerun by the graph (reruns: 1). Task `a` is indexed at
    `index_path` when it completes."""

    task_queue_id: str
    group_id: str
    plain: dict[str, str]          # name -> taskId
    graph_id: str
    graph_tasks: dict[str, str]    # label -> taskId
    index_path: str

    @classmethod
    def create(cls, services: Services, task_queue_id: str) -> Workload:
        group_id, index_path = new_slugid(), f"faults.t{new_slugid()[:8].replace('-', 'x').replace('_', 'y')}.a"

        def task(*dependencies: str, **overrides) -> str:
            return create(services, task_queue_id, taskGroupId=group_id, dependencies=list(dependencies), **overrides)
        plain = {"a": task(routes=[f"index.{index_path}"])}
        plain["b"] = task(plain["a"])
        plain["c"] = task(plain["b"])
        plain["top"] = task()
        plain["left"], plain["right"] = task(plain["top"]), task(plain["top"])
        plain["bottom"] = task(plain["left"], plain["right"])
        graph_id = new_slugid()
        services.task_graphs.create(graph_id, graph(task_queue_id, flaky={"reruns": 1},
                                                    after={"requires": ["flaky"]}, solo={}))
        graph_tasks = {entry["label"]: entry["taskId"] for entry in services.task_graphs.inspect(graph_id)["tasks"]}
        return cls(task_queue_id, group_id, plain, graph_id, graph_tasks, index_path)

    @property
    def all_tasks(self) -> list[str]:
        return [*self.plain.values(), *self.graph_tasks.values()]

    def outcome(self, task_id: str, run_id: int) -> str:
        return "failed" if task_id == self.graph_tasks["flaky"] and run_id == 0 else "completed"


def deliver_with_crashes(services: Services, fault: Fault, recovery: str) -> list[tuple[str, int]]:
    """Deliver the 'task resolved' events with the fault armed; returns the crashed ones.

    recovery="redeliver": a crashed message is not deleted, so the storage queue delivers it
    again once its hold ends, and the handler runs again (unarmed) as the trigger would.
    recovery="sweep" (or "in process"): a crashed message is lost; only the claim expiry sweep
    can finish the work.
    """
    events = services.task_calls.updater.messages.resolved
    handler = services.dependency_resolver
    crashed, pending_redelivery = [], set()
    give_up = time.monotonic() + 30
    while True:
        messages = events.receive(32, HOLD)
        if not messages and not pending_redelivery:
            return crashed
        assert time.monotonic() < give_up, f"events still undelivered: {pending_redelivery}"
        if not messages:
            time.sleep(0.2)   # a crashed message is still held; the queue brings it back
            continue
        for message in messages:
            key = (message.body["taskId"], message.body["runId"])
            redelivered = key in pending_redelivery
            fault.armed = not redelivered
            try:
                handler.handle_message(message.body)
            except Crash:
                crashed.append(key)
                if recovery == "redeliver":
                    pending_redelivery.add(key)
                    continue            # not deleted: delivered again after HOLD
            finally:
                fault.armed = False
            if redelivered:
                assert message.dequeue_count >= 2     # it really came back through the queue
            pending_redelivery.discard(key)
            events.delete(message)


def sweep_until_handled(services: Services, work: Workload, crashed: list[tuple[str, int]]) -> None:
    """The crashed resolutions' events are lost: run the claim expiry sweep past their claims'
    `takenUntil` until every one was announced again and handled (its claim row is gone)."""
    later = utcnow() + timedelta(hours=1)
    give_up = time.monotonic() + 30
    while set(crashed) & set(services.work_claimer.claim_table.held_by(work.task_queue_id, "wg", "w")):
        assert time.monotonic() < give_up, "the claim expiry sweep did not finish the crashed resolutions"
        services.claim_resolver.sweep(now=later)
        deliver_events(services)
        later += timedelta(minutes=2)   # past the sweep's next look at a row it announced


def drive(services: Services, work: Workload, fault: Fault, recovery: str) -> tuple[list, list]:
    """Work the queue as workers would until every task is completed; returns
    (every claim as (taskId, runId), every crashed resolution)."""
    claims, crashed = [], []
    tasks = services.task_calls
    for _ in range(20):
        if all(tasks.status(task_id)["state"] == "completed" for task_id in work.all_tasks):
            return claims, crashed
        claimed = services.work_claimer.claim_work(work.task_queue_id, "wg", "w", 32)["tasks"]
        new_crashes = []
        for claim in claimed:
            key = (claim["status"]["taskId"], claim["runId"])
            claims.append(key)
            fault.armed = recovery == "in process"
            fired = len(fault.fired)
            try:
                getattr(services.resolutions, work.outcome(*key))(*key)
                # The group and graph are finished after the call answers: armed until then.
                assert services.dependency_resolver.settled()
            except Crash:
                pass
            finally:
                fault.armed = False
            if len(fault.fired) > fired:   # it died here, in the call or after it answered
                new_crashes.append(key)
        new_crashes += deliver_with_crashes(services, fault, recovery)
        if recovery != "redeliver":
            sweep_until_handled(services, work, new_crashes)
        crashed += new_crashes
    raise AssertionError(f"the workload did not finish: {[tasks.status(t)['state'] for t in work.all_tasks]}")


def snapshot(services: Services, work: Workload) -> dict:
    """Everything a resolution can change: statuses, the graph, the group."""
    group = services.task_groups.group_table.load(work.group_id)
    statuses = {task_id: services.task_calls.status(task_id) for task_id in work.all_tasks}
    last_resolved = max(statuses[task_id]["runs"][-1]["resolved"] for task_id in work.plain.values())
    return {
        "statuses": statuses,
        "graph": services.task_graphs.inspect(work.graph_id),
        # The group is marked resolved when its last member's resolution is followed up: at
        # or after that resolution, and no later for the events repeating.
        "group": (group.resolved, group.resolved >= last_resolved,
                  services.task_groups.group_table.unresolved(work.group_id)),
        "pending": services.task_queues.counts(work.task_queue_id),
        "indexed": services.index.find(work.index_path),
    }


@pytest.mark.parametrize("recovery", ["in process", "redeliver", "sweep"])
@pytest.mark.parametrize("point", list(FAULT_POINTS))
def test_a_crash_in_the_handler_loses_nothing_and_runs_nothing_twice(azurite, monkeypatch, task_queue_id,
                                                                      point, recovery):
    services = build_services(azurite, repair_delay=1)
    if recovery != "in process":   # every resolution announced, as a long fan-out's is
        services.task_calls.updater.after_resolution = services.task_calls.updater.messages
    work = Workload.create(services, task_queue_id)
    owner, name, when = FAULT_POINTS[point]
    fault = Fault(owner(services), name, when)
    fault.install(monkeypatch)

    claims, crashed = drive(services, work, fault, recovery)

    assert fault.fired and crashed, "the fault point was never reached"
    flaky = work.graph_tasks["flaky"]
    expected_claims = {(task_id, 0) for task_id in work.all_tasks} | {(flaky, 1)}
    assert sorted(claims) == sorted(expected_claims)          # each run claimed exactly once
    statuses = {task_id: services.task_calls.status(task_id) for task_id in work.all_tasks}
    for task_id, status in statuses.items():
        runs = [(run["state"], run["reasonCreated"]) for run in status["runs"]]
        if task_id == flaky:
            assert runs == [("failed", "scheduled"), ("completed", "rerun")]
        else:
            assert runs == [("completed", "scheduled")], task_id
    inspected = services.task_graphs.inspect(work.graph_id)
    assert inspected["state"] == "finished" and inspected["blockedBy"] == []
    assert {entry["label"]: entry["rerunsLeft"] for entry in inspected["tasks"]} == \
        {"flaky": 0, "after": 0, "solo": 0}
    group = services.task_groups.group_table.load(work.group_id)
    assert group.resolved and services.task_groups.group_table.unresolved(work.group_id) == []
    assert services.index.find(work.index_path)["taskId"] == work.plain["a"]
    # The diamond's bottom was scheduled only after both sides resolved, and so on down the chain.
    for later, earlier in (("b", "a"), ("c", "b"), ("bottom", "left"), ("bottom", "right")):
        assert statuses[work.plain[later]]["runs"][0]["scheduled"] >= \
            statuses[work.plain[earlier]]["runs"][0]["resolved"]

    # Every resolution's event delivered twice more, and handled twice more directly, with
    # no fault armed: nothing changes.
    before = snapshot(services, work)
    resolutions = sorted(claims)
    for _ in range(2):
        for task_id, run_id in resolutions:
            services.task_calls.updater.messages.announce(Resolution.of(services.task_calls.task_table.load(task_id), run_id))
    assert deliver_events(services) == 2 * len(resolutions)
    for task_id, run_id in resolutions:
        assert services.dependency_resolver.handle(task_id, run_id) is True
    services.repairs.sweep()
    assert services.claim_resolver.sweep(now=utcnow() + timedelta(hours=2)) == 0
    assert snapshot(services, work) == before
    group = services.task_groups.group_table.load(work.group_id)
    assert group.resolved >= max(status["runs"][-1]["resolved"] for task_id, status in before["statuses"].items()
                                 if task_id in work.plain.values())
    assert services.work_claimer.claim_work(task_queue_id, "wg", "w", 32)["tasks"] == []
