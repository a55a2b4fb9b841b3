"""The one way a task's status changes: read the row, apply a transition, write it back
conditionally, and keep the index rows in step.

Crash safety comes from the order of writes:
- a new pending run's hint is written *before* the row that makes the run pending, so no
  pending run is ever without a hint (a leftover hint is harmless: claimers check the row);
- hint removals happen *after* the row write; if they are lost, claimers find the hint
  stale and drop it; a claimed run's row goes after the write too (the claim expiry sweep
  removes one left behind), except when the run resolved the task: then the resolution
  handler removes it, once it is done;
- a change that resolves the task is followed up after the row write (see
  `dependency_resolver`); one that resolves an unclaimed run sends a delayed repair intent
  before it (see `resolution_messages`), so no resolution is lost;
- the events of the change are written with it, in the row's outbox, and published right
  after it (see `event_publisher`), before anything that follows from the change.
Losing the conditional write means someone else changed the task first: read again.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from typing import Callable, Protocol

from shared.domain.dependencies import became_resolved
from shared.domain.errors import NotFound, QueueError
from shared.domain.runs import Run, RunState
from shared.domain.task_definition import priority_rank
from shared.domain.task_status import TaskStatus
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.tables.pending_table import PendingHint, PendingTable
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.services.event_publisher import EventPublisher
from shared.services.dependencies.resolution_messages import Resolution, ResolutionMessages, SharedIntent
from shared.services.claims.work_signal import WorkSignal

log = logging.getLogger("queue.tasks")

Transition = Callable[[TaskStatus], TaskStatus]


class FollowUp(Protocol):
    """What follows a write that resolved a task: the dependency resolver's `follow_up` in
    the process that resolved it, or the resolution's message to the queue-triggered one."""

    def follow_up(self, resolution: Resolution) -> None: ...


class TaskUpdater:
    def __init__(self, task_table: TaskTable, pending_table: PendingTable, claim_table: ClaimTable, signal: WorkSignal,
                 messages: ResolutionMessages, publisher: EventPublisher, follow_up: FollowUp) -> None:
        self.publisher = publisher
        self.task_table = task_table
        self.pending_table = pending_table
        self.claim_table = claim_table
        self.signal = signal
        self.messages = messages
        self.after_resolution = follow_up

    def apply(self, task_id: str, transition: Transition, action: str,
              with_definition: bool = False, remove_hints: bool = True,
              authorize: Callable[[TaskRecord], None] | None = None,
              standing: SharedIntent | None = None) -> TaskRecord:
        """`authorize(record)`: the caller's scope check on the task as read, before any write.
        `standing`: the caller's intent for the resolution of a run nobody claimed (see `write`).

        The first attempt starts from the row as this process last wrote it, when it remembers
        it (a round trip saved). That version may be stale, so it only ever leads to a write
        conditional on its ETag: any other outcome (nothing to change, a refusal, a write
        that lost) is decided again on the row read afresh."""
        remembered = self.task_table.last_written(task_id, with_definition)

        def write(record: TaskRecord | None) -> TaskRecord:
            fresh = record is not remembered
            if record is None:
                raise NotFound(f"Task {task_id} not found")
            try:
                if authorize is not None:
                    authorize(record)
                status = transition(record.status)
            except Exception:
                if fresh:
                    raise
                raise ChangedSinceRead(task_id)   # a refusal is decided on the row as it is
            if status is record.status:
                if not fresh:
                    raise ChangedSinceRead(task_id)
                if record.outbox:   # left by a writer that may have died: see event_publisher
                    self.publisher.settle(self.task_table, task_id, record.outbox, record.etag)
                return record
            saved, resolution = self.write(record, status, remove_hints, standing)
            log.info("task %s %s: %s -> %s", task_id, action, record.status.state.value, status.state.value,
                     extra={"taskId": task_id, "action": action})
            if resolution is not None:
                self.after_resolution.follow_up(resolution)
            return saved

        def gave_up() -> TaskRecord:
            raise QueueError(f"Task {task_id} is changing too quickly to {action}; try again")
        return until_written(lambda: self.task_table.load(task_id, with_definition), write, remembered, gave_up)

    def apply_many(self, task_ids: list[str], transition: Transition, action: str, pool,
                   authorize: Callable[[TaskRecord], None] | None = None) -> list[str]:
        """`try_apply` for tasks whose changes only ever make a run pending (a fan-out's
        dependents scheduled): each starts from the row as remembered or read (on `pool`),
        the hints of the runs made pending are written together, then the rows, each
        conditionally, both a transaction per partition. Returns the tasks left to
        `try_apply` one by one: a change refused (the row changed since), a transition that
        raised or had nothing to do on a remembered row (decided again on the row read afresh),
        a task with no row (not written yet: the caller knows what that calls for), and one
        whose row `authorize` (as `apply`'s) refuses: decided and told again on its own."""
        remembered = {task_id: self.task_table.last_written(task_id) for task_id in task_ids}
        unknown = [task_id for task_id, record in remembered.items() if record is None]
        records = {**remembered, **dict(zip(unknown, pool.map(self.task_table.load, unknown)))}
        planned, again = [], []
        for task_id, record in records.items():
            if record is None:   # not written yet: left to the caller, which knows what that means
                again.append(task_id)
                continue
            try:
                if authorize is not None:
                    authorize(record)
                status = transition(record.status)
            except Exception:   # refused: decided and told again on its own
                again.append(task_id)
                continue
            if status.pending_run and status.pending_run != record.status.pending_run:
                planned.append((record, status))
            elif status is not record.status or task_id not in unknown:
                again.append(task_id)
        hints = self.add_hints([(record.summary, record.task_id, status.pending_run) for record, status in planned])
        hint_of = {hint.task_id: hint for hint in hints}
        before = {record.task_id: record for record, _ in planned}

        def saved(records: list[TaskRecord]) -> None:   # out before they can be claimed and resolved
            self.publisher.written_together(self.task_table, records)
            made = defaultdict(list)
            for record in records:
                log.info("task %s %s: %s -> %s", record.task_id, action, before[record.task_id].status.state.value,
                         record.status.state.value, extra={"taskId": record.task_id, "action": action})
                made[record.summary["taskQueueId"]].append(hint_of[record.task_id])
            for queue_id, hints in made.items():
                self.signal.notify(queue_id, len(hints), made=hints)
        outcomes = self.task_table.save_statuses(planned, saved)
        return again + [record.task_id for (record, _), outcome in zip(planned, outcomes)
                        if isinstance(outcome, ChangedSinceRead)]

    def try_apply(self, task_id: str, transition: Transition, action: str,
                  standing: SharedIntent | None = None) -> bool:
        """Like `apply`, for sweeps: True if this call changed the task (False if the task
        is gone or the transition had nothing to do)."""
        return self.apply_if_found(task_id, transition, action, standing=standing)[0]

    def apply_if_found(self, task_id: str, transition: Transition, action: str, with_definition: bool = False,
                       authorize: Callable[[TaskRecord], None] | None = None,
                       standing: SharedIntent | None = None) -> tuple[bool, TaskRecord | None]:
        """Like `apply`: whether this call changed the task, and the task as it is now
        (None if it does not exist)."""
        changed = [False]  # decided by the attempt whose write went through

        def tracked(status: TaskStatus) -> TaskStatus:
            after = transition(status)
            changed[0] = after is not status
            return after
        try:
            record = self.apply(task_id, tracked, action, with_definition=with_definition, authorize=authorize,
                                standing=standing)
        except NotFound:
            return False, None
        return changed[0], record

    def write(self, record: TaskRecord, status: TaskStatus, remove_hints: bool = True,
              standing: SharedIntent | None = None) -> tuple[TaskRecord, Resolution | None]:
        """Write `status` over `record` with its index rows; raises ChangedSinceRead. Returns
        the task as saved, and the resolution to follow up if the write resolved the task.
        `remove_hints=False`: the caller removes the hints of runs that left pending (claimWork
        removes those of all its claims in one transaction). A write resolving a run nobody
        claimed sends a repair intent first, unless the caller's `standing` one names the task."""
        queue_id = record.summary["taskQueueId"]
        new_pending = status.pending_run
        hints = []
        if new_pending and new_pending != record.status.pending_run:
            hints = self.add_hints([(record.summary, status.task_id, new_pending)])
        resolved_run = became_resolved(record.status, status)
        claimed = resolved_run is not None and _was_running(record.status, resolved_run)
        intent = None
        if resolved_run is not None and not claimed:
            # no claim row to stand for it
            intent = standing.join() if standing is not None else self.messages.intend(status.task_id, resolved_run)
        try:
            saved = self.task_table.save_status(record, status)
        except Exception:
            if standing is not None and intent is not None:
                standing.settled(True)   # nothing written: nothing for it to stand for
            raise
        for before, after in _changed_runs(record.status, status):
            if remove_hints and before and before.state is RunState.PENDING and after.state is not RunState.PENDING:
                # Out of pending for good: deleted with others of its bucket a moment later (a
                # claimer elsewhere that reads it meanwhile finds the run not pending).
                self.pending_removed(record.summary, status.task_id, before, soon=True)
            if before and before.state is RunState.RUNNING and after.state is not RunState.RUNNING \
                    and after.run_id != resolved_run:
                self.claim_table.remove([claim_row(queue_id, status.task_id, before)])  # retried: nothing to follow
        published = self.publisher.written(self.task_table, saved)
        if hints:
            self.signal.notify(queue_id, 1, made=hints)
        if resolved_run is None:
            return saved, None
        return saved, replace(Resolution.of(saved, resolved_run), published=published, intent=intent)

    def add_hints(self, pending: list[tuple[dict, str, Run]]) -> list[PendingHint]:
        """Hints for pending runs given as (summary or definition, taskId, run), batched; the
        hints written, for the work signal once their runs are pending (see `pending_buffer`)."""
        return self.pending_table.add_many([
            (summary["taskQueueId"], priority_rank(summary["priority"]), run.scheduled, task_id, run.run_id)
            for summary, task_id, run in pending])

    def pending_removed(self, summary: dict, task_id: str, run: Run, soon: bool = False) -> None:
        self.pending_table.remove_run(summary["taskQueueId"], priority_rank(summary["priority"]),
                                      run.scheduled, task_id, run.run_id, soon)


def claim_row(task_queue_id: str, task_id: str, run: Run) -> ClaimRow:
    """The claim row of a claimed run (see `claim_table`)."""
    return ClaimRow(task_queue_id, task_id, run.run_id, run.worker_group or "", run.worker_id or "",
                    run.taken_until or "")


def _was_running(status: TaskStatus, run_id: int) -> bool:
    run = status.run(run_id)
    return run is not None and run.state is RunState.RUNNING


def _changed_runs(old: TaskStatus, new: TaskStatus):
    for run in new.runs:
        before = old.run(run.run_id)
        if before != run:
            yield before, run
