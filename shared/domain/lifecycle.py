"""Every legal change of a task's runs, in one place.

Each transition takes a `TaskStatus` and the current time and returns the new status, or
the very same object when the call changes nothing (the API's idempotent cases). An
illegal transition raises `Conflict`; an unknown run raises `NotFound`. Storage and
messaging are someone else's business: see `shared.services.tasks.task_updater`.
"""

from __future__ import annotations

from datetime import datetime

from shared.domain.errors import Conflict, NotFound
from shared.domain.runs import RETRYABLE_REASONS, ReasonCreated, ReasonResolved, Run, RunState, TaskState
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import parse_iso, to_iso

# Taskcluster refuses to add runs beyond this many, so a task cannot rerun forever.
MAX_RUNS = 50

_RESOLVED_STATE = {
    ReasonResolved.COMPLETED: RunState.COMPLETED,
    ReasonResolved.FAILED: RunState.FAILED,
}


def is_past_deadline(status: TaskStatus, now: datetime) -> bool:
    return parse_iso(status.deadline) <= now


def _refuse_past_deadline(status: TaskStatus, now: datetime, action: str) -> None:
    if is_past_deadline(status, now):
        raise Conflict(f"Task {status.task_id} cannot be {action}: its deadline {status.deadline} has passed")


def _new_run(status: TaskStatus, reason: ReasonCreated, now: datetime) -> Run:
    if len(status.runs) >= MAX_RUNS:
        raise Conflict(f"Task {status.task_id} already has {MAX_RUNS} runs, the most allowed")
    return Run(run_id=len(status.runs), state=RunState.PENDING, reason_created=reason, scheduled=to_iso(now))


def _existing_run(status: TaskStatus, run_id: int) -> Run:
    run = status.run(run_id)
    if run is None:
        raise NotFound(f"Task {status.task_id} has no run {run_id}")
    return run


def schedule(status: TaskStatus, now: datetime) -> TaskStatus:
    """Give an unscheduled task its first, pending run; anything else is left as it is."""
    _refuse_past_deadline(status, now, "scheduled")
    if status.state is not TaskState.UNSCHEDULED:
        return status
    return status.with_runs(_new_run(status, ReasonCreated.SCHEDULED, now))


def claim(status: TaskStatus, run_id: int, worker_group: str, worker_id: str,
          now: datetime, taken_until: datetime) -> TaskStatus:
    run = _existing_run(status, run_id)
    if run is not status.pending_run:
        raise Conflict(f"Run {run_id} of task {status.task_id} is not pending")
    _refuse_past_deadline(status, now, "claimed")
    return status.with_runs(run.evolve(
        state=RunState.RUNNING, worker_group=worker_group, worker_id=worker_id,
        started=to_iso(now), taken_until=to_iso(taken_until),
    ))


def reclaim(status: TaskStatus, run_id: int, now: datetime, taken_until: datetime) -> TaskStatus:
    """Extend a live claim. A claim whose `takenUntil` has passed is lost, even if the
    expiry has not been processed yet: the expiry and the reclaim compare the same time."""
    run = _existing_run(status, run_id)
    if run is not status.running_run:
        raise Conflict(f"Run {run_id} of task {status.task_id} is not running")
    if parse_iso(run.taken_until) <= now:
        raise Conflict(f"The claim on run {run_id} of task {status.task_id} expired at {run.taken_until}")
    _refuse_past_deadline(status, now, "reclaimed")
    return status.with_runs(run.evolve(taken_until=to_iso(taken_until)))


def resolve(status: TaskStatus, run_id: int, reason: ReasonResolved, now: datetime) -> TaskStatus:
    """Resolve a running run as completed, failed or exception (with `reason`).

    Repeating the same resolution is a no-op, so a worker may retry its report. After a
    retryable exception a new pending run is added while retries are left.
    """
    run = _existing_run(status, run_id)
    if run.state.is_resolved:
        if run.reason_resolved is reason:
            return status
        raise Conflict(f"Run {run_id} of task {status.task_id} is already resolved "
                       f"as {run.state.value} ({run.reason_resolved.value})")
    if run.state is not RunState.RUNNING:
        raise Conflict(f"Run {run_id} of task {status.task_id} is not running")
    return _resolve_latest(status, run, reason, now)


def _resolve_latest(status: TaskStatus, run: Run, reason: ReasonResolved, now: datetime) -> TaskStatus:
    resolved = run.evolve(
        state=_RESOLVED_STATE.get(reason, RunState.EXCEPTION),
        reason_resolved=reason, resolved=to_iso(now),
    )
    retry_reason = RETRYABLE_REASONS.get(reason)
    # Past the deadline no run could be claimed: the task resolves instead of retrying.
    if retry_reason and status.retries_left > 0 and len(status.runs) < MAX_RUNS \
            and not is_past_deadline(status, now):
        retried = status.with_runs(resolved, retries_left=status.retries_left - 1)
        return retried.with_runs(_new_run(retried, retry_reason, now))
    return status.with_runs(resolved)


def cancel(status: TaskStatus, now: datetime) -> TaskStatus:
    """Resolve the current run as exception/canceled; an unscheduled task gets a run for it."""
    _refuse_past_deadline(status, now, "canceled")
    if status.state.is_resolved:
        return status
    return _resolve_unfinished(status, ReasonResolved.CANCELED, now)


def _resolve_unfinished(status: TaskStatus, reason: ReasonResolved, now: datetime) -> TaskStatus:
    if status.state is TaskState.UNSCHEDULED:
        stamp = to_iso(now)
        return status.with_runs(Run(
            run_id=0, state=RunState.EXCEPTION, reason_created=ReasonCreated.EXCEPTION,
            reason_resolved=reason, scheduled=stamp, resolved=stamp,
        ))
    return status.with_runs(status.latest.evolve(
        state=RunState.EXCEPTION, reason_resolved=reason, resolved=to_iso(now),
    ))


def rerun(status: TaskStatus, now: datetime) -> TaskStatus:
    """Start a new run of a resolved (or unscheduled) task and reset its retries."""
    _refuse_past_deadline(status, now, "rerun")
    if status.state in (TaskState.PENDING, TaskState.RUNNING):
        return status
    reset = status.with_runs(retries_left=status.retries)
    return reset.with_runs(_new_run(reset, ReasonCreated.RERUN, now))


def expire_claim(status: TaskStatus, run_id: int, now: datetime) -> TaskStatus:
    """Resolve a run whose claim ran out as exception/claim-expired (retried while retries
    last and the deadline has not passed).

    A reclaim that moved `takenUntil` past `now` wins: the status is returned unchanged.
    """
    run = status.run(run_id)
    if run is None or run is not status.running_run or parse_iso(run.taken_until) > now:
        return status
    return _resolve_latest(status, run, ReasonResolved.CLAIM_EXPIRED, now)


def exceed_deadline(status: TaskStatus, now: datetime) -> TaskStatus:
    """Resolve an unresolved task past its deadline as exception/deadline-exceeded; no retry."""
    if status.state.is_resolved or not is_past_deadline(status, now):
        return status
    return _resolve_unfinished(status, ReasonResolved.DEADLINE_EXCEEDED, now)
