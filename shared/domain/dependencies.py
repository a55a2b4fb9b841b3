"""When a dependency counts as satisfied, and which run resolutions announce a resolved task.

- `all-completed`: a dependency is satisfied when it resolves completed. A failed or
  exception dependency leaves the dependent waiting, so a rerun of the dependency can still
  unblock it; scheduleTask forces it.
- `all-resolved`: any resolution satisfies it.
"""

from __future__ import annotations

from .runs import ReasonCreated, RunState
from .task_status import TaskStatus

ALL_COMPLETED = "all-completed"
ALL_RESOLVED = "all-resolved"
MAX_DEPENDENCIES = 10_000


def satisfies(requires: str, run_state: RunState) -> bool:
    if requires == ALL_RESOLVED:
        return run_state.is_resolved
    return run_state is RunState.COMPLETED


def resolution_of(status: TaskStatus, run_id: int) -> RunState | None:
    """The state the task resolved in with run `run_id`, or None if that run did not
    resolve the task (it is still live, or the queue retried it with a new run)."""
    run = status.run(run_id)
    if run is None or not run.state.is_resolved:
        return None
    following = status.run(run_id + 1)
    if following is not None and following.reason_created in (ReasonCreated.RETRY, ReasonCreated.TASK_RETRY):
        return None
    return run.state


def became_resolved(before: TaskStatus, after: TaskStatus) -> int | None:
    """The run id with which `after` newly resolved the task, if this change resolved it."""
    if not after.state.is_resolved:
        return None
    if before.state.is_resolved and len(before.runs) == len(after.runs):
        return None
    return after.latest.run_id
