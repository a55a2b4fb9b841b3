"""The time-driven resolvers: claims that ran out and deadlines that passed.

Each has the same shape (as Taskcluster's claim and deadline resolvers): a row is put in
a time index before the change it watches is written; when it comes due a sweep applies
one transition to the task row, which decides whether anything is still to be done (a
reclaim that moved `takenUntil` wins over the expiry, a resolved task ignores its
deadline), and removes the row. Handling a row twice changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from ..domain import lifecycle
from ..domain.timestamps import to_iso, utcnow
from ..storage.task_table import TaskRecord
from ..storage.time_index import DueItem, TimeIndex
from .task_updates import TaskUpdater

log = logging.getLogger("queue.time")
BATCH = 100
KEEP = None  # what `_handle` answers for an item that is not ready to be handled yet


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
            removed = 0
            for item in items:
                outcome = self._handle(item, moment)
                if outcome is not KEEP:
                    changed += outcome
                    self.index.remove(item)
                    removed += 1
            handled += len(items)
            if len(items) < BATCH or not removed:
                break
        return changed

    def _handle(self, item: DueItem, now: datetime) -> int | None:
        """Act on one due item: 1 if a task changed, 0 if nothing was left to do, or KEEP."""
        raise NotImplementedError


class _RunResolver(TimeResolver):
    """Applies one transition to the task row an item names; the row decides if it still applies."""

    def __init__(self, index: TimeIndex, updater: TaskUpdater) -> None:
        super().__init__(index)
        self.updater = updater

    def _handle(self, item: DueItem, now: datetime) -> int:
        task_id, _, run = item.key.partition(".")
        run_id = int(run) if run else None
        changed, record = self.updater.apply_if_found(task_id, self.transition(run_id, now), self.action)
        if not changed:
            self._unchanged(record, run_id)
            return 0
        log.info("task %s: %s", task_id, self.action, extra={"taskId": task_id, "action": self.action})
        return 1

    def _unchanged(self, record: TaskRecord | None, run_id: int | None) -> None:
        """The item had nothing left to do; a resolver may tidy up after it."""


class ClaimExpiry(_RunResolver):
    action = "claim expired"

    def watch(self, task_id: str, run_id: int, taken_until: datetime) -> None:
        self.index.add([(to_iso(taken_until), f"{task_id}.{run_id}")])

    @staticmethod
    def transition(run_id: int, now: datetime):
        return lambda status: lifecycle.expire_claim(status, run_id, now)

    def _unchanged(self, record: TaskRecord | None, run_id: int) -> None:
        # The run resolved in time. Its claimed-run row was removed after that write; a
        # process that died right after the write left it behind, so remove it (again).
        run = record.status.run(run_id) if record else None
        if run is not None and run.state.is_resolved:
            self.updater.claims.remove(record.summary["taskQueueId"], record.task_id, run_id)


class Deadlines(_RunResolver):
    action = "deadline exceeded"

    def watch(self, deadlines: list[tuple[str, str]]) -> None:
        """(taskId, deadline) pairs of new tasks."""
        self.index.add([(deadline, task_id) for task_id, deadline in deadlines])

    @staticmethod
    def transition(_run_id, now: datetime):
        return lambda status: lifecycle.exceed_deadline(status, now)
