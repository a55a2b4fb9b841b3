"""A run is one attempt at a task; a task's state is its latest run's state.

Invariants kept here and in `lifecycle`:
- runs are numbered 0, 1, 2, ... and `runs[i].run_id == i`;
- only the latest run may be pending or running; every earlier run is resolved;
- a resolved run never changes again.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import Enum


class RunState(str, Enum):
    PENDING = "pending"      # waiting for a worker to claim it
    RUNNING = "running"      # claimed; the worker must reclaim before `taken_until`
    COMPLETED = "completed"  # the worker reported success
    FAILED = "failed"        # the worker reported that the task itself failed
    EXCEPTION = "exception"  # resolved for another reason: see `reason_resolved`

    @property
    def is_resolved(self) -> bool:
        return self in (RunState.COMPLETED, RunState.FAILED, RunState.EXCEPTION)


class TaskState(str, Enum):
    """A task's state: its latest run's state, or `unscheduled` when it has none."""

    UNSCHEDULED = "unscheduled"
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    EXCEPTION = "exception"

    @property
    def is_resolved(self) -> bool:
        return self in (TaskState.COMPLETED, TaskState.FAILED, TaskState.EXCEPTION)


class ReasonCreated(str, Enum):
    SCHEDULED = "scheduled"    # the task's first run, when it was scheduled
    RETRY = "retry"            # the previous run hit worker-shutdown or claim-expired
    TASK_RETRY = "task-retry"  # the previous run reported intermittent-task
    RERUN = "rerun"            # rerunTask
    EXCEPTION = "exception"    # a run created only to be resolved (cancel or deadline of an unscheduled task)


class ReasonResolved(str, Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    DEADLINE_EXCEEDED = "deadline-exceeded"
    CANCELED = "canceled"
    CLAIM_EXPIRED = "claim-expired"
    WORKER_SHUTDOWN = "worker-shutdown"
    MALFORMED_PAYLOAD = "malformed-payload"
    RESOURCE_UNAVAILABLE = "resource-unavailable"
    INTERNAL_ERROR = "internal-error"
    INTERMITTENT_TASK = "intermittent-task"


# Exception reasons after which the queue starts a new run while retries are left.
RETRYABLE_REASONS = {
    ReasonResolved.WORKER_SHUTDOWN: ReasonCreated.RETRY,
    ReasonResolved.CLAIM_EXPIRED: ReasonCreated.RETRY,
    ReasonResolved.INTERMITTENT_TASK: ReasonCreated.TASK_RETRY,
}

# Exception reasons a worker may report (the rest are the queue's own).
WORKER_EXCEPTION_REASONS = (
    ReasonResolved.WORKER_SHUTDOWN,
    ReasonResolved.MALFORMED_PAYLOAD,
    ReasonResolved.RESOURCE_UNAVAILABLE,
    ReasonResolved.INTERNAL_ERROR,
    ReasonResolved.INTERMITTENT_TASK,
)


@dataclass(frozen=True)
class Run:
    run_id: int
    state: RunState
    reason_created: ReasonCreated
    scheduled: str
    reason_resolved: ReasonResolved | None = None
    worker_group: str | None = None
    worker_id: str | None = None
    taken_until: str | None = None
    started: str | None = None
    resolved: str | None = None

    def evolve(self, **changes) -> Run:
        return replace(self, **changes)

    def to_json(self) -> dict:
        """The run as Taskcluster's status structure shows it (absent fields omitted)."""
        out = {}
        for attribute, name in _JSON_NAMES:
            value = getattr(self, attribute)
            if value is not None:
                out[name] = value.value if isinstance(value, Enum) else value
        return out

    @classmethod
    def from_json(cls, data: dict) -> Run:
        reason = data.get("reasonResolved")
        return cls(
            run_id=data["runId"],
            state=RunState(data["state"]),
            reason_created=ReasonCreated(data["reasonCreated"]),
            scheduled=data["scheduled"],
            reason_resolved=ReasonResolved(reason) if reason else None,
            worker_group=data.get("workerGroup"),
            worker_id=data.get("workerId"),
            taken_until=data.get("takenUntil"),
            started=data.get("started"),
            resolved=data.get("resolved"),
        )


# A run's attributes, each with its name in Taskcluster's status structure.
_CAMEL = {"run_id": "runId", "reason_created": "reasonCreated", "reason_resolved": "reasonResolved",
          "worker_group": "workerGroup", "worker_id": "workerId", "taken_until": "takenUntil"}
_JSON_NAMES = tuple((field.name, _CAMEL.get(field.name, field.name)) for field in fields(Run))
