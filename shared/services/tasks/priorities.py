"""changeTaskPriority and changeTaskGroupPriority: a new priority for unresolved tasks, as
Taskcluster's queue gives it.

A task's priority orders its pending run among the others of its queue: the run's hint is
keyed by it (see `pending_table`). So a pending run's hint moves with the change, in the
order the task updater keeps for every change (see `task_updater`): the hint at the new
priority is written *before* the task row says the new priority, and the hint at the old
one removed *after*, only if it is still the version read before the change (two changes
racing, low to high and back, must not remove the hint the second wrote again). A claimer
skips a hint whose priority the task row does not say, and removes it once it is older than
a new task's row may take to follow its hint (see `work_claimer`). So a process that dies
between the writes leaves only a hint too many, never a pending run without one; and the
run is claimed by one worker, whichever hint led to it, since a claim is a conditional
write of the task row. A claimed run keeps the place it had; its retries and reruns are
made pending at the new priority.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable

from shared.domain import lifecycle, task_events
from shared.domain.errors import Conflict, NotFound
from shared.domain.task_definition import priority_rank
from shared.domain.task_status import render_status
from shared.domain.timestamps import to_iso, utcnow
from shared.services.event_publisher import EventPublisher
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.tasks.task_updater import TaskUpdater
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.tables.pending_table import PendingTable
from shared.storage.tables.task_table import TaskRecord, TaskTable

log = logging.getLogger("queue.tasks")


class Priorities:
    def __init__(self, task_table: TaskTable, pending_table: PendingTable, updater: TaskUpdater, groups: TaskGroups,
                 publisher: EventPublisher) -> None:
        self.task_table = task_table
        self.pending_table = pending_table
        self.updater = updater
        self.groups = groups
        self.publisher = publisher

    def change_task(self, task_id: str, priority: str,
                    authorize: Callable[[TaskRecord], None] | None = None) -> dict:
        """changeTaskPriority: the task's status once it has `priority`, announced by
        task-priority-changed; Conflict if the task is resolved, past its deadline or has
        that priority already (as Taskcluster, which answers 409 to all three)."""
        def write(record: TaskRecord | None) -> TaskRecord:
            if record is None:
                raise NotFound(f"Task `{task_id}` not found. Are you sure it was created?")
            if authorize is not None:
                authorize(record)
            refusal = _refusal(record, priority, utcnow())
            if refusal:
                raise Conflict(refusal)
            return self._write(record, priority, announce=True)
        saved = until_written(lambda: self.task_table.load(task_id), write)
        return {"status": render_status(saved.summary, saved.status)}

    def change_group(self, task_group_id: str, priority: str, authorize: Callable | None = None) -> dict:
        """changeTaskGroupPriority: every unresolved member still before its deadline gets
        `priority`; announced once, by task-group-priority-changed."""
        return self.groups.change_priority(task_group_id, priority, lambda task_id: self._change_member(
            task_id, priority), authorize)

    def _change_member(self, task_id: str, priority: str) -> bool:
        """A member's change (no event of its own); whether this call made it."""
        def write(record: TaskRecord | None) -> bool:
            if record is None or _refusal(record, priority, utcnow()):
                return False
            self._write(record, priority, announce=False)
            return True
        return until_written(lambda: self.task_table.load(task_id), write)

    def _write(self, record: TaskRecord, priority: str, announce: bool) -> TaskRecord:
        """The row with the new priority, its pending run's hint moved; ChangedSinceRead if
        the row changed since `record` was read (the new hint then stays, a harmless pointer)."""
        old, pending, queue_id = record.summary["priority"], record.status.pending_run, record.summary["taskQueueId"]
        old_hint = (queue_id, priority_rank(old), pending.scheduled, record.task_id, pending.run_id) if pending else None
        version = self.pending_table.version(*old_hint) if pending else None
        hints = self.updater.add_hints([({**record.summary, "priority": priority}, record.task_id, pending)]) \
            if pending else []

        def events(summary: dict) -> list[task_events.Event]:
            return [task_events.priority_changed(summary, record.notice, record.status, old, priority,
                                                 to_iso(utcnow()))] if announce else []
        saved = self.task_table.save_priority(record, priority, events)
        log.info("task %s priority: %s -> %s", record.task_id, old, priority,
                 extra={"taskId": record.task_id, "action": "change priority"})
        if version:
            self.pending_table.remove_version(*old_hint, version)
        self.publisher.written(self.task_table, saved)
        if hints:   # this process's claimers take it in its new place
            self.updater.signal.notify(queue_id, 1, made=hints)
        return saved


def _refusal(record: TaskRecord, priority: str, now: datetime) -> str:
    """Why the task's priority cannot become `priority` now ('' if it can)."""
    task_id = record.task_id
    if lifecycle.is_past_deadline(record.status, now):
        return f"Task `{task_id}` can't be reprioritized past its deadline of {record.status.deadline}."
    if record.status.state.is_resolved:
        return f"Task `{task_id}` is already resolved and cannot be reprioritized."
    if record.summary["priority"] == priority:
        return f"Task `{task_id}` has priority `{priority}` already."
    return ""
