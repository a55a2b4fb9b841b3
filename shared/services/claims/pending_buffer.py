"""The pending hints this process read from a task queue and has not handed out yet.

claimWork finds runs through their hints (see `work_claimer`), and reading a queue's first hints
is a query: one that Azurite answers by scanning the whole PendingTasks table, every hint of
every queue (90,000 while a large fan-out waits), so each claimWork cost more the larger the
backlog. A process now reads READ hints at once and hands them to its claimWork calls, each
hint to one call, in claim order (or at random among the best priority while claimers of
other processes contend for the queue); it reads again once they are used up, or FRESH
seconds after its read. Runs this process makes pending join the hints held, in their
order, as soon as their task rows say so (the work signal hands over the hints written for
them): a claimWork right after the createTask that made its run needs no read, and a run of
a better priority made here is never behind older hints. One that sorts after the last hint
held when the read left hints unread is left to a later read, which finds it in its place.
Work another process makes pending is seen by the next read, within FRESH seconds, or at
once when the work signal's poll found it (its `generation` moves on).

A hint is only a pointer: one that another process claimed since it was read is found so
when its task row is read, and dropped, as before.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from shared.storage.tables.pending_table import PendingHint, PendingTable
from shared.services.claims.work_signal import WorkSignal

READ = 500      # hints read at a time: Azurite's cost is the scan, hardly the page
FRESH = 1.0     # seconds hints read are handed out before the queue is read again


@dataclass
class _Held:
    hints: list[PendingHint] = field(default_factory=list)   # in claim order
    read_at: float = 0.0
    generation: int = -1
    complete: bool = False   # the read found every hint of the queue (fewer than it asked for)


class PendingBuffer:
    def __init__(self, pending_table: PendingTable, signal: WorkSignal, read: int = READ, fresh: float = FRESH) -> None:
        self.pending_table = pending_table
        self.signal = signal
        self.read = read
        self.fresh = fresh
        self._held: dict[str, _Held] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        signal.on_made_here(self.made_here)

    def take(self, task_queue_id: str, count: int, at_random: bool, may_read: bool = True) -> list[PendingHint]:
        """Up to `count` runs' hints for one claimWork (a run's twin hints with its first),
        read from storage if what this process holds is used up or old (and `may_read`: a
        claimWork reads at most once, as it did before hints were kept)."""
        with self._lock(task_queue_id):
            held = self._held.get(task_queue_id)
            generation = self.signal.generation(task_queue_id)
            stale = held is None or held.generation != generation or time.monotonic() - held.read_at > self.fresh
            if not may_read and (stale or not held.hints):
                return []
            if stale or not held.hints:
                hints = self.pending_table.peek(task_queue_id, self.read)
                held = self._held[task_queue_id] = _Held(hints, time.monotonic(), generation, len(hints) < self.read)
            return _pop(held.hints, count, at_random)

    def made_here(self, task_queue_id: str, hints: list[PendingHint]) -> None:
        """The hints of runs this process just made pending join those held, in claim order."""
        if not hints:
            return
        with self._lock(task_queue_id):
            held = self._held.get(task_queue_id)
            if held is None:
                return   # the next claimWork reads them
            last = held.hints[-1].row_key if held.hints else None
            joining = [hint for hint in hints if held.complete or (last is not None and hint.row_key < last)]
            _merge(held, joining)

    def give_back(self, task_queue_id: str, hints: list[PendingHint]) -> None:
        """Hints taken and not tried: handed out again while still fresh."""
        if not hints:
            return
        with self._lock(task_queue_id):
            held = self._held.get(task_queue_id)
            if held is not None and held.generation == self.signal.generation(task_queue_id):
                _merge(held, hints)

    def _lock(self, task_queue_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(task_queue_id, threading.Lock())


def _merge(held: _Held, hints: list[PendingHint]) -> None:
    keys = {(hint.partition, hint.row_key) for hint in held.hints}
    held.hints = sorted(held.hints + [hint for hint in hints if (hint.partition, hint.row_key) not in keys],
                        key=lambda hint: hint.row_key)


def _pop(hints: list[PendingHint], count: int, at_random: bool) -> list[PendingHint]:
    """Take out the hints of up to `count` runs: the first ones, or, while claimers contend
    for the queue, runs at random among those of the best priority present (concurrent
    claimers all taking the first ones would lose their races to each other). A run's twin
    hints (two schedulers racing to make it pending each wrote one) come with it."""
    runs = list(dict.fromkeys((hint.task_id, hint.run_id) for hint in hints))
    if at_random and runs:
        best = hints[0].row_key.split(".", 1)[0]
        same = list(dict.fromkeys((hint.task_id, hint.run_id) for hint in hints
                                  if hint.row_key.split(".", 1)[0] == best))
        chosen = set(random.sample(same, min(count, len(same))))
    else:
        chosen = set(runs[:count])
    taken = [hint for hint in hints if (hint.task_id, hint.run_id) in chosen]
    hints[:] = [hint for hint in hints if (hint.task_id, hint.run_id) not in chosen]
    return taken
