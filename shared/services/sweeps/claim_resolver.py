"""The time-driven resolvers: claims that ran out and deadlines that passed.

Each has the same shape (as Taskcluster's claim and deadline resolvers): a row is written
before the change it watches (a deadline in its group, a claim in its claim row); when
it comes due a sweep applies one transition to the task row, which decides whether
anything is still to be done (a reclaim that moved `takenUntil` wins over the expiry, a
resolved task ignores its deadline). Handling a row twice changes nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from datetime import datetime, timedelta

from shared.domain import lifecycle
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.domain.runs import RunState
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.patterns.recent_writes import RecentWrites
from shared.storage.tables.task_group_table import TaskGroupTable
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.services.dependencies.resolution_messages import Resolution
from shared.services.tasks.task_updater import TaskUpdater

if TYPE_CHECKING:  # Expiration is itself a TimeResolver, defined in its own module
    from shared.services.sweeps.task_expiry import Expiration

log = logging.getLogger("queue.time")
BATCH = 100
GROUP = "group."           # a deadline item's key: the group whose members' deadlines came
SECOND = timedelta(seconds=1)
WATCHED = 16_384           # groups and seconds this process remembers having indexed
MAX_MEMBERS = 1_000_000    # a second's members read at once (a graph's tasks share a deadline)
KEEP = None  # what `_handle` answers for an item that is not ready to be handled yet
# A claim row of a resolution being processed is looked at again this much later.
RECHECK = timedelta(minutes=1)


class TimeResolver:
    """A sweep of one time index: each due item is handled, then its index row removed."""

    action = ""

    def __init__(self, index: TimeIndex) -> None:
        self.index = index

    def sweep(self, now: datetime | None = None, max_items: int = 1000) -> int:
        """Handle what came due, in batches; returns how many tasks changed."""
        changed = handled = 0
        while handled < max_items:
            moment = now or utcnow()
            items = self.index.due(moment, min(BATCH, max_items - handled))
            outcomes = self._handle_batch(items, moment)
            done = [item for item, outcome in zip(items, outcomes) if outcome is not KEEP]
            changed += sum(outcome for outcome in outcomes if outcome is not KEEP)
            self.index.remove(done)   # after the work: a crash in between only repeats it
            handled += len(items)
            if len(items) < BATCH or not done:
                break
        return changed

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        """Act on a batch of due items; by default, on each in turn."""
        return [self._handle(item, now) for item in items]

    def _handle(self, item: DueItem, now: datetime) -> int | None:
        """Act on one due item: 1 if a task changed, 0 if nothing was left to do, or KEEP."""
        raise NotImplementedError


class Deadlines(TimeResolver):
    """Tasks past their deadline: each resolved `exception`/`deadline-exceeded` (a resolved
    task ignores its deadline, so the task row decides). A task past its deadline is
    resolved for good, so this is also where its expiry is indexed, for the expiration
    sweep: a batch of tasks in a transaction or two, instead of a write per createTask.

    What comes due is a group and a second of deadlines ("group.<taskGroupId>", due at the
    second's start), indexed once per process before the first member with a deadline in
    that second is written; the members themselves are the group's deadline rows (see
    `task_group_table`), written with their membership. So a task costs its deadline no
    write of its own, and a task that resolved before it no read: its deadline row says
    when it resolved and with how many runs, which is all its expiry needs unless it has
    dependencies (then its row is read, as is any task that has not resolved or was rerun).
    """

    action = "deadline exceeded"

    def __init__(self, index: TimeIndex, updater: TaskUpdater, expiration: Expiration, groups: TaskGroupTable) -> None:
        super().__init__(index)
        self.updater = updater
        self.expiration = expiration
        self.groups = groups
        self._watched: RecentWrites[bool] = RecentWrites(size=WATCHED)

    def watch(self, definitions: dict[str, dict]) -> None:
        """Before new tasks (taskId -> definition) are made members of their groups: index
        each group and second of their deadlines that this process has not indexed yet."""
        seconds = {(definition["taskGroupId"], _second(definition["deadline"])) for definition in definitions.values()}
        new = sorted(pair for pair in seconds if self._watched.get("@".join(pair)) is None)
        if not new:
            return
        self.index.add([(second, GROUP + group_id) for group_id, second in new])
        for pair in new:
            self._watched.wrote("@".join(pair), True)

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        return [self._handle_second(item.key[len(GROUP):], item.due, now) if item.key.startswith(GROUP) else 0
                for item in items]

    def _handle_second(self, group_id: str, second: str, now: datetime) -> int | None:
        """The group's members with a deadline in that second and past `now`: each resolved
        if it is not, then indexed at its expiry. KEEP while some of the second is ahead."""
        rows = self.groups.deadline_rows(group_id, second, to_iso(parse_iso(second) + SECOND), MAX_MEMBERS)
        due = [row for row in rows if parse_iso(row.deadline) <= now]
        changed, past, noted = 0, [], []
        for row in due:
            if row.resolved and not row.rerun and row.plain:
                noted.append((group_id, row))
                continue
            exceeded, record = self.updater.apply_if_found(
                row.task_id, lambda status: lifecycle.exceed_deadline(status, now), self.action, with_definition=True)
            if exceeded:
                changed += 1
                log.info("task %s: %s", row.task_id, self.action, extra={"taskId": row.task_id, "action": self.action})
            if record is not None and lifecycle.is_past_deadline(record.status, now):
                past.append(record)   # (not past it: a row of a createTask refused late, another task's)
        self.expiration.watch(past, to_iso(now), noted)   # before the item goes: a crash only repeats it
        return KEEP if len(due) < len(rows) else changed


class ClaimExpiry:
    """Claims past `takenUntil`, found by their claim rows (see `claim_table`).

    A due row's run is resolved `exception`/`claim-expired` (retried while retries last)
    unless the task row says otherwise: a reclaim moved `takenUntil` (the row is moved
    after it), or the run is over. A row of a run that resolved its task is the intent of
    that resolution: its handler removes the row once done, so a due one means the
    announcement may have been lost, and it is announced again.
    """

    action = "claim expired"

    def __init__(self, claims: ClaimTable, updater: TaskUpdater) -> None:
        self.claims = claims
        self.updater = updater

    def sweep(self, now: datetime | None = None, max_items: int = 1000) -> int:
        """Handle the claim rows that came due; returns how many tasks changed."""
        moment = now or utcnow()
        return sum(self._handle(row, moment) for row in self.claims.due(to_iso(moment), max_items))

    def _handle(self, row: ClaimRow, now: datetime) -> int:
        changed, record = self.updater.apply_if_found(
            row.task_id, lambda status: lifecycle.expire_claim(status, row.run_id, now), self.action)
        run = record.status.run(row.run_id) if record else None
        resolution = Resolution.of(record, row.run_id) if run else None
        if resolution and (resolution.worker_group, resolution.worker_id) == (row.worker_group, row.worker_id):
            if not changed:   # resolved earlier: its handler may never have run
                log.warning("task %s run %s: resolution announced again (its claim row is still here)",
                            row.task_id, row.run_id, extra={"taskId": row.task_id, "repair": "task-resolved"})
                self.updater.events.announce(resolution)
            self.claims.move(row, to_iso(now + RECHECK))
        elif run and run.state is RunState.RUNNING and (run.worker_group, run.worker_id) == \
                (row.worker_group, row.worker_id):
            self.claims.move(row, run.taken_until)   # reclaimed: the row had not followed yet
        else:
            self.claims.remove([row])   # retried, or a claim that lost its race, or a task gone
        if changed:
            log.info("task %s: %s", row.task_id, self.action, extra={"taskId": row.task_id, "action": self.action})
        return int(changed)


def _second(deadline: str) -> str:
    """The start of the second a deadline falls in, as ISO text."""
    return to_iso(parse_iso(deadline).replace(microsecond=0))
