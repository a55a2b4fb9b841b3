"""Deletes that may wait: rows whose removal only saves later work, collected for up to
EVERY seconds and then deleted in one transaction per partition (100 rows at most each).

Only for rows that are safe to leave behind: if the process dies before the flush, the row
stays, and whatever reads it later finds its work done and removes it (a claim row of a
resolution already followed up is the case in point: see `claim_table`). Under load many
rows of one partition go in one round trip instead of one each.
"""

from __future__ import annotations

import threading

from shared.storage.patterns.batches import delete_in_batches
from shared.runtime.periodic import every

EVERY = 0.5   # seconds a row may wait for its delete


class DeferredDeletes:
    def __init__(self, table, name: str) -> None:
        self._table = table
        self._name = name
        self._waiting: set[tuple[str, str]] = set()
        self._deleting: set[tuple[str, str]] = set()   # taken by a flush under way
        self._lock = threading.Lock()
        # Held through a flush's deletes: a flush that finds nothing waiting must still wait
        # for one under way, or a count right after it would see rows about to go.
        self._flushing = threading.Lock()
        self._flusher: threading.Thread | None = None

    def add(self, keys: list[tuple[str, str]]) -> None:
        """Delete the rows given as (PartitionKey, RowKey) within EVERY seconds."""
        with self._lock:
            self._waiting.update(keys)
            if self._flusher is None:
                self._flusher = every(EVERY, self, "flush", f"deferred deletes of {self._name}")

    def holds(self) -> set[tuple[str, str]]:
        """The rows given and not deleted yet, as (PartitionKey, RowKey): what a reader of
        this process takes as gone."""
        with self._lock:
            return self._waiting | self._deleting

    def flush(self) -> int:
        """Delete the rows waiting now; how many there were."""
        with self._flushing:
            with self._lock:
                keys, self._waiting = self._waiting, set()
                self._deleting = keys
            try:   # not kept for another try if this fails: rows left behind are safe to leave (see above)
                delete_in_batches(self._table, sorted(keys))
            finally:
                with self._lock:
                    self._deleting = set()
            return len(keys)
