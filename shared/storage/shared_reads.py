"""One read for many askers: threads of a process asking storage the same question at the
same time share one round trip.

Many completions at once ask the same thing: is any member of the group unresolved, is any
label of the graph open, is any requirement of the fan-in task left. Each needs an answer
read after it asked (after its own write: the member, label or requirement it removed), not
a read of its own. So an asker joins the next read of its key, which starts when the read in
flight for that key (if any) has ended: at most one read per key runs and one waits, however
many ask, and each answer comes from a read that started after its asker asked, as its own
read would have. Azurite evaluates every query against every row of the table, so on a graph
of 10,000 tasks these repeated checks were most of what storage did for a completion.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class _Read:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value = None
        self.error: BaseException | None = None


class SharedReads:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[Hashable, _Read] = {}   # not started: askers join it
        self._running: dict[Hashable, _Read] = {}

    def read(self, key: Hashable, fetch: Callable[[], T]) -> T:
        """`fetch()`'s value, from a call of it that started after this one. The value may be
        shared with other askers of the same key: read it, do not change it."""
        with self._lock:
            read = self._waiting.get(key)
            leads = read is None
            if leads:
                read = self._waiting[key] = _Read()
        if not leads:
            read.done.wait()
            return _outcome(read)
        with self._lock:
            ahead = self._running.get(key)
        if ahead is not None:
            ahead.done.wait()
        with self._lock:
            del self._waiting[key]   # whoever asks from now on asked after this read began
            self._running[key] = read
        try:
            read.value = fetch()
        except BaseException as error:
            read.error = error
        finally:
            with self._lock:
                del self._running[key]
            read.done.set()
        return _outcome(read)


def _outcome(read: _Read):
    if read.error is not None:
        raise read.error
    return read.value
