"""The shape every time-driven sweep shares (as Taskcluster's claim and deadline resolvers and
its expiry crons): a time index row is written before the change it watches; when it comes
due a sweep handles it, then removes the row. Handling a row twice changes nothing, so a
sweep killed between the two only repeats the work.
"""

from __future__ import annotations

from datetime import datetime

from shared.domain.timestamps import utcnow
from shared.storage.patterns.time_index import DueItem, TimeIndex

BATCH = 100
KEEP = None  # what `_handle` answers for an item that is not ready to be handled yet


class Sweep:
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
