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
from typing import Generic, TypeVar

Record = TypeVar("Record")
SIZE = 4096   # rows remembered; at ~2 KB each (a status and a modest definition), ~8 MB


class RecentWrites(Generic[Record]):
    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._rows: OrderedDict[str, Record] = OrderedDict()
        self._lock = threading.Lock()

    def wrote(self, key: str, record: Record) -> None:
        with self._lock:
            self._rows[key] = record
            self._rows.move_to_end(key)
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)

    def get(self, key: str) -> Record | None:
        with self._lock:
            return self._rows.get(key)

    def forget(self, key: str) -> None:
        with self._lock:
            self._rows.pop(key, None)
