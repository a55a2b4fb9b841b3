"""The rows this process wrote last, each as it wrote it (its ETag included), so that the next
change of the same row can start from it instead of reading it again.

A task's lifecycle is a chain of changes to one row: created, claimed, resolved. When the
same process makes two of them in a row (one host, or a worker's calls reaching the
instance that made the change before), the version it wrote is still the current one and
a read would only return it again. A version remembered here is never trusted for anything
but a first attempt at a conditional write: if another process changed the row since, the
write fails on its ETag and the caller reads the row as it would have (see
`TaskUpdater.apply`). So the memory can be stale, never wrong; at worst it costs the one
refused write.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Callable, Generic, TypeVar

Record = TypeVar("Record")
# Rows remembered: enough for a graph of 10,000 tasks created by this process to be
# scheduled and claimed without reading its tasks again (4,096 made its fan-out read most).
SIZE = 16_384
# And at most this much of their weight (a task's: the characters of the definition it
# keeps), so that large definitions cannot make the memory grow past tens of megabytes.
BUDGET = 8_000_000


class RecentWrites(Generic[Record]):
    def __init__(self, size: int = SIZE, weigh: Callable[[Record], int] = lambda record: 0,
                 budget: int = BUDGET) -> None:
        self.size = size
        self.weigh = weigh
        self.budget = budget
        self._rows: OrderedDict[str, tuple[Record, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def wrote(self, key: str, record: Record) -> None:
        weight = self.weigh(record)
        with self._lock:
            self._drop(key)
            self._rows[key] = (record, weight)
            self._weight += weight
            while len(self._rows) > self.size or self._weight > self.budget:
                self._drop(next(iter(self._rows)))

    def get(self, key: str) -> Record | None:
        with self._lock:
            found = self._rows.get(key)
        return found[0] if found else None

    def outbox_cleared(self, key: str, cleared: tuple | None) -> None:
        """After `outbox.clear` of the row remembered under `key` (a record with `outbox` and
        `etag`), which returned `cleared`: remembered with the outbox left and the new ETag if
        the clear replaced the version remembered, else forgotten (written since by another
        process, or not cleared), so that the next change does not start from a stale ETag."""
        remembered = self.get(key)
        if remembered is None:
            return
        if cleared is not None and remembered.etag == cleared[1]:
            self.wrote(key, replace(remembered, outbox=cleared[0], etag=cleared[2]))
        else:
            self.forget(key)

    def forget(self, key: str) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: str) -> None:
        _, weight = self._rows.pop(key, (None, 0))
        self._weight -= weight
