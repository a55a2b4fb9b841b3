"""The events a change announces, as Taskcluster's queue publishes them (seed 004).

A task's events follow from its status before and after a change, so they are derived
here, in one place, from the transition itself: no code path can change a task without
its event. Each event carries a stable id (the same change always gets the same id), so
a consumer, or Service Bus duplicate detection, drops an event delivered twice.

Taskcluster's rules, kept here:
- createTask announces task-defined (with the status as it was before any run: unscheduled,
  no runs, as Taskcluster's carries), then task-pending if the task is ready;
- a new pending run (scheduled, retried, rerun) is task-pending; a claim is task-running
  (a reclaim announces nothing); a resolved run is task-completed, task-failed or
  task-exception, a run that ended in exception *and was retried* too (its task-exception,
  then the new run's task-pending, as Taskcluster 106's claim resolver and reportException
  publish them);
- an artifact is announced created once it is present (an object once finished; a
  reference, link or error at once, and again when replaced; s3 artifacts are not announced);
- a group is announced resolved when its last unresolved member resolves, and sealed;
- (ours, not Taskcluster's) a group is announced stalled when the watchdog records a verdict
  about it (see `domain.group_watch`);
- changeTaskPriority announces task-priority-changed (the status and both priorities, no
  run in its routing key); changeTaskGroupPriority announces task-group-priority-changed
  once, when it is done, and nothing for each task.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from shared.domain.exchanges import QUEUE_PREFIX, full_name
from shared.domain.runs import Run, RunState
from shared.domain.task_status import TaskStatus, render_status

EXCHANGE_PREFIX = QUEUE_PREFIX
TASK_EXCHANGES = ("task-defined", "task-pending", "task-running", "artifact-created", "task-completed",
                  "task-failed", "task-exception")
GROUP_EXCHANGES = ("task-group-resolved", "task-group-sealed", "task-group-stalled")   # the last is ours
EXCHANGES = TASK_EXCHANGES + GROUP_EXCHANGES
_RESOLVED = {RunState.COMPLETED: "task-completed", RunState.FAILED: "task-failed",
             RunState.EXCEPTION: "task-exception"}


@dataclass(frozen=True)
class Event:
    exchange: str              # the short name: 'task-pending' (its service: `exchanges`)
    routing_key: str           # the primary routing key
    body: dict
    id: str                    # stable: the same change always has the same id
    at: str                    # when the change was recorded (ISO 8601)
    routes: tuple[str, ...] = ()   # the task's routes: copies go to `route.<r>`
    # Which process wrote the event into an outbox, and its number there (see
    # `storage/outbox/publication_marks`); not part of what is published. Empty: not written yet.
    writer: str = ""
    seq: int = 0

    @property
    def exchange_name(self) -> str:
        return full_name(self.exchange)

    @property
    def cc(self) -> list[str]:
        """The extra routing keys (AMQP's `CC` header), as Pulse sends them."""
        return [f"route.{route}" for route in self.routes]

    def to_json(self) -> dict:
        data = {"exchange": self.exchange, "routingKey": self.routing_key, "body": self.body, "id": self.id,
                "at": self.at, "routes": list(self.routes)}
        if self.writer:
            data.update(writer=self.writer, seq=self.seq)
        return data

    @classmethod
    def from_json(cls, data: dict) -> Event:
        return cls(data["exchange"], data["routingKey"], data["body"], data["id"], data["at"],
                   tuple(data.get("routes", ())), data.get("writer", ""), data.get("seq", 0))


def encode(events: tuple[Event, ...] | list[Event]) -> str:
    return json.dumps([event.to_json() for event in events], separators=(",", ":"))


def decode(text: str) -> tuple[Event, ...]:
    return tuple(Event.from_json(item) for item in json.loads(text)) if text else ()


def task_changed(summary: dict, notice: dict, before: TaskStatus | None, after: TaskStatus,
                 at: str) -> list[Event]:
    """The events of a task's change from `before` (None: created now) to `after`.
    `summary` holds the status fields of the definition, `notice` its `routes` and `tags`."""
    events = []
    if before is None:
        defined = replace(after, runs=(), retries_left=after.retries)
        events.append(_task_event("task-defined", summary, notice, defined, None, at))
    for run in after.runs:
        old = before.run(run.run_id) if before else None
        if old is not None and old.state is run.state:
            continue
        events.append(_task_event(_announced_as(run), summary, notice, after, run, at))
    return events


def _announced_as(run: Run) -> str:
    if run.state is RunState.PENDING:
        return "task-pending"
    if run.state is RunState.RUNNING:
        return "task-running"
    return _RESOLVED[run.state]


def _task_event(exchange: str, summary: dict, notice: dict, status: TaskStatus, run: Run | None,
                at: str) -> Event:
    claimed = run is not None and run.worker_group is not None and exchange != "task-pending"
    body = {"version": 1, "status": render_status(summary, status), "task": {"tags": notice.get("tags", {})}}
    if run is not None:
        body["runId"] = run.run_id
    if claimed:
        body["workerGroup"], body["workerId"] = run.worker_group, run.worker_id
    if exchange == "task-running":
        body["takenUntil"] = run.taken_until
    words = ["primary", status.task_id, str(run.run_id) if run else "_",
             body.get("workerGroup", "_"), body.get("workerId", "_"),
             summary["provisionerId"], summary["workerType"], summary["schedulerId"], summary["taskGroupId"], "_"]
    event_id = f"{status.task_id}/{exchange}" + (f"/{run.run_id}" if run else "")
    return Event(exchange, ".".join(words), body, event_id, at, tuple(notice.get("routes", ())))


def artifact_created(summary: dict, notice: dict, status: TaskStatus, run_id: int, artifact: dict,
                     at: str) -> Event:
    """`artifact` is its metadata as Taskcluster shows it (storageType, name, expires,
    contentType); the run is the one that made it (so it names the worker)."""
    run = status.run(run_id)
    event = _task_event("artifact-created", summary, notice, status, run, at)
    meta = {key: artifact[key] for key in ("storageType", "name", "expires", "contentType")}
    digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:12]
    body = {key: value for key, value in event.body.items() if key != "task"}   # Taskcluster's has no tags
    body["artifact"] = meta
    return Event(event.exchange, event.routing_key, body, f"{event.id}/{digest}", at, event.routes)


def priority_changed(summary: dict, notice: dict, status: TaskStatus, old: str, new: str, at: str) -> Event:
    """`summary` holds the new priority already."""
    event = _task_event("task-priority-changed", summary, notice, status, None, at)
    body = {"version": 1, "status": event.body["status"], "oldPriority": old, "newPriority": new}
    return Event(event.exchange, event.routing_key, body, f"{event.id}/{old}-{new}/{at}", at, event.routes)


def group_priority_changed(task_group_id: str, scheduler_id: str, new: str, affected: int, at: str) -> Event:
    body = {"version": 1, "taskGroupId": task_group_id, "schedulerId": scheduler_id, "newPriority": new,
            "tasksAffected": affected}
    return _group_event("task-group-priority-changed", body, f"{task_group_id}/task-group-priority-changed/{at}", at)


def group_resolved(task_group_id: str, scheduler_id: str, expires: str, resolved: str, at: str,
                   sealed: str = "") -> Event:
    """A group's members have all resolved (again, if tasks joined it since the last time);
    `sealed` when it was sealed, as Taskcluster's body says."""
    body = {"version": 1, "taskGroupId": task_group_id, "schedulerId": scheduler_id, "expires": expires,
            **({"sealed": sealed} if sealed else {})}
    return _group_event("task-group-resolved", body, f"{task_group_id}/task-group-resolved/{resolved}", at)


def group_sealed(task_group_id: str, scheduler_id: str, expires: str, sealed: str, at: str) -> Event:
    body = {"version": 1, "taskGroupId": task_group_id, "schedulerId": scheduler_id, "expires": expires,
            "sealed": sealed}
    return _group_event("task-group-sealed", body, f"{task_group_id}/task-group-sealed", at)


def group_stalled(task_group_id: str, scheduler_id: str, expires: str, verdict: dict, at: str) -> Event:
    """The watchdog's verdict about a group (`Verdict.to_json()`); its state is the routing
    key's third word, where Taskcluster's group exchanges reserve room (`primary.<taskGroupId>.
    <schedulerId>.<state>`: bind `primary.*.*.no-workers` for those alone). One verdict of one
    quiet spell is one event, however often it is looked at."""
    body = {"version": 1, "taskGroupId": task_group_id, "schedulerId": scheduler_id, "expires": expires,
            **verdict}
    return _group_event("task-group-stalled", body,
                        f"{task_group_id}/task-group-stalled/{verdict['since']}/{verdict['state']}", at, verdict["state"])


def _group_event(exchange: str, body: dict, event_id: str, at: str, reserved: str = "_") -> Event:
    return Event(exchange, f"primary.{body['taskGroupId']}.{body['schedulerId']}.{reserved}", body, event_id, at)


# Following one group: the bindings that select its events, by the routing keys above.

def group_bindings(task_group_id: str) -> list[tuple[str, str]]:
    """(full exchange name, AMQP pattern) for every event about the group and its tasks, as
    Taskcluster's client (`QueueEvents` with only `taskGroupId`) would bind them."""
    task_pattern = f"primary.*.*.*.*.*.*.*.{task_group_id}.#"
    group_pattern = f"primary.{task_group_id}.#"
    return ([(EXCHANGE_PREFIX + name, task_pattern) for name in TASK_EXCHANGES]
            + [(EXCHANGE_PREFIX + name, group_pattern) for name in GROUP_EXCHANGES])


def group_of(exchange: str, routing_key: str) -> str | None:
    """The taskGroupId a primary routing key names (None for a key of another shape)."""
    words = routing_key.split(".")
    if exchange in GROUP_EXCHANGES:
        return words[1] if len(words) >= 2 else None
    return words[8] if len(words) >= 9 else None
