"""What happens when a task's deadline passes: it is resolved `exception`/`deadline-exceeded`
(Taskcluster's deadline resolver), and indexed for its expiry.

Creation indexes each group and second of deadlines once per process (`DeadlineWatch`);
the resolver sweeps what came due. A resolved task ignores its deadline: the task row decides.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from datetime import datetime, timedelta

from shared.domain import lifecycle
from shared.domain.timestamps import parse_iso, to_iso
from shared.storage.patterns.recent_writes import RecentWrites
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.task_group_table import DeadlineRow, TaskGroupTable
from shared.storage.tables.task_table import TaskRecord
from shared.services.sweeps.sweep import KEEP, Sweep
from shared.services.sweeps.task_expiry import TaskExpiry
from shared.services.dependencies.resolution_messages import MAX_NAMED
from shared.services.tasks.task_updater import TaskUpdater

log = logging.getLogger("queue.time")
GROUP = "group."           # a deadline item's key: the group whose members' deadlines came
SECOND = timedelta(seconds=1)
WATCHED = 16_384           # groups and seconds this process remembers having indexed
MAX_MEMBERS = 1_000_000    # a second's members read at once (a graph's tasks share a deadline)


class DeadlineWatch:
    """What the deadline resolver will sweep, indexed at creation: a group and a second of
    deadlines ("group.<taskGroupId>", due at the second's start), once per process before
    the first member with a deadline in that second is written."""

    def __init__(self, index: TimeIndex) -> None:
        self.index = index
        self._watched: RecentWrites[bool] = RecentWrites(size=WATCHED)

    def due(self, definitions: dict[str, dict]) -> bool:
        """Whether `watch` has anything to write for these tasks."""
        return bool(self._unwatched(definitions))

    def watch(self, definitions: dict[str, dict]) -> None:
        """Before new tasks (taskId -> definition) are made members of their groups: index
        each group and second of their deadlines that this process has not indexed yet."""
        self.add(self._unwatched(definitions))

    def add(self, seconds: list[tuple[str, str]]) -> None:
        """Index these (taskGroupId, second of deadlines) pairs, whatever this process wrote
        before: the watchdog's, handing on the deadlines its items carried (see `GroupWatch`)."""
        if not seconds:
            return
        self.index.add([(second, GROUP + group_id) for group_id, second in seconds])
        for pair in seconds:
            self._watched.wrote("@".join(pair), True)

    def _unwatched(self, definitions: dict[str, dict]) -> list[tuple[str, str]]:
        seconds = {(definition["taskGroupId"], deadline_second(definition["deadline"]))
                   for definition in definitions.values()}
        return sorted(pair for pair in seconds if self._watched.get("@".join(pair)) is None)


class DeadlineResolver(Sweep):
    """Tasks past their deadline: each resolved `exception`/`deadline-exceeded` (a resolved
    task ignores its deadline, so the task row decides). A task past its deadline is
    resolved for good, so this is also where its expiry is indexed, for the expiration
    sweep: a batch of tasks in a transaction or two, instead of a write per createTask.

    What comes due is a group and a second of deadlines (see `DeadlineWatch`); the members
    themselves are the group's deadline rows (see `task_group_table`), written with their
    membership. So a task costs its deadline no write of its own, and a task that resolved
    before it no read: its deadline row says when it resolved and with how many runs, which
    is all its expiry needs unless it has dependencies (then its row is read, as is any task
    that has not resolved or was rerun).
    """

    action = "deadline exceeded"

    def __init__(self, index: TimeIndex, updater: TaskUpdater, task_expiry: TaskExpiry, group_table: TaskGroupTable) -> None:
        super().__init__(index)
        self.updater = updater
        self.task_expiry = task_expiry
        self.group_table = group_table

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        """Each item's group and second; then every task past its deadline indexed at its
        expiry in one write for the batch (a group per task has an item per task), before
        the items go: a crash only repeats it."""
        past: list[TaskRecord] = []
        noted: list[tuple[str, DeadlineRow]] = []
        outcomes = [self._handle_second(item.key[len(GROUP):], item.due, now, past, noted)
                    if item.key.startswith(GROUP) else 0 for item in items]
        self.task_expiry.watch(past, to_iso(now), noted)
        return outcomes

    def _handle_second(self, group_id: str, second: str, now: datetime, past: list[TaskRecord],
                       noted: list[tuple[str, DeadlineRow]]) -> int | None:
        """The group's members with a deadline in that second and past `now`: each resolved
        if it is not, then added to `past` (as read) or `noted` (as its deadline row says,
        having resolved in time) for their expiry. KEEP while some of the second is ahead."""
        rows = self.group_table.deadline_rows(group_id, second, to_iso(parse_iso(second) + SECOND), MAX_MEMBERS)
        due = [row for row in rows if parse_iso(row.deadline) <= now]
        looked = []   # those whose deadline row does not say they resolved in time
        for row in due:
            if row.resolved and not row.rerun and row.plain:
                noted.append((group_id, row))
            else:
                looked.append(row)
        changed = 0
        for start in range(0, len(looked), MAX_NAMED):
            changed += self._exceed(looked[start:start + MAX_NAMED], now, past)
        return KEEP if len(due) < len(rows) else changed

    def _exceed(self, rows: list[DeadlineRow], now: datetime, past: list[TaskRecord]) -> int:
        """Resolve those of `rows` not resolved yet, under one repair intent for the runs nobody
        claimed that this resolves (see `SharedIntent`); how many it resolved."""
        changed = 0
        # One task alone: its own intent, sent only if its write resolves a run nobody claimed.
        intent = self.updater.messages.intend_many([row.task_id for row in rows]) if len(rows) > 1 else nullcontext()
        with intent as standing:
            for row in rows:
                exceeded, record = self.updater.apply_if_found(
                    row.task_id, lambda status: lifecycle.exceed_deadline(status, now), self.action,
                    with_definition=True, standing=standing)
                if exceeded:
                    changed += 1
                    log.info("task %s: %s", row.task_id, self.action,
                             extra={"taskId": row.task_id, "action": self.action})
                if record is not None and lifecycle.is_past_deadline(record.status, now):
                    past.append(record)   # (not past it: a row of a createTask refused late, another task's)
        return changed


def deadline_second(deadline: str) -> str:
    """The start of the second a deadline falls in, as ISO text."""
    return to_iso(parse_iso(deadline).replace(microsecond=0))
