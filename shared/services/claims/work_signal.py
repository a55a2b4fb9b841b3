"""Wakes long-polling claimWork calls of this process when their task queue has work.

Work made in this process (a task created, scheduled or retried here) wakes waiting callers
at once through `notify`, one caller per new pending run. Work made by other processes is
found by polling storage, but with one poll per task queue and process, shared by every
caller waiting on that queue, every POLL_INTERVAL: a thousand idle workers on one queue
cost twenty small queries a second, not one query each per interval. The poll wakes as many
callers as it sees pending runs; a caller that loses its run to another waits again.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Callable

log = logging.getLogger("queue.claims")
POLL_INTERVAL = 0.05  # seconds: how soon a caller learns of work made by another process (p95 within 100 ms)
PROBE_LIMIT = 32      # pending runs looked at per poll: at most this many callers woken at once


class WorkSignal:
    def __init__(self, pending_runs: Callable[[str, int], int] | None = None,
                 interval: float = POLL_INTERVAL) -> None:
        """`pending_runs(taskQueueId, limit)`: how many pending runs storage shows (up to limit)."""
        self._pending_runs = pending_runs
        self._interval = interval
        self._lock = threading.Lock()
        self._waiting: dict[str, list[threading.Event]] = defaultdict(list)  # oldest first
        self._polled: set[str] = set()
        self._generations: dict[str, int] = defaultdict(int)   # notifies so far, per queue
        self._listeners: list[Callable[[str, list], None]] = []

    def generation(self, task_queue_id: str) -> int:
        """How many times work was announced on the queue in this process: what a reader of
        its hints compares to know whether new work came since (see `pending_buffer`)."""
        with self._lock:
            return self._generations[task_queue_id]

    def on_made_here(self, listener: Callable[[str, list], None]) -> None:
        """`listener(taskQueueId, hints)` hears of the hints of runs made pending here."""
        self._listeners.append(listener)

    def notify(self, task_queue_id: str, runs: int | None = None, made: list | None = None) -> None:
        """`runs` new pending runs on the queue (None: wake every caller). `made`: the hints
        of those runs, written by this process, which its listeners take in; without them
        the queue's generation moves on (what readers of hints held must read again)."""
        for listener in self._listeners if made is not None else ():
            listener(task_queue_id, made)
        with self._lock:
            if made is None:
                self._generations[task_queue_id] += 1
            waiting = self._waiting.get(task_queue_id, [])
            for event in waiting[:runs] if runs is not None else waiting:
                event.set()

    def wait(self, task_queue_id: str, timeout: float) -> bool:
        """Wait up to `timeout` s for work on the queue; True if woken for it."""
        event = threading.Event()
        with self._lock:
            self._waiting[task_queue_id].append(event)
            if self._pending_runs and task_queue_id not in self._polled:
                self._polled.add(task_queue_id)
                threading.Thread(target=self._poll, args=(task_queue_id,), daemon=True,
                                 name=f"work-poll-{task_queue_id}").start()
        try:
            return event.wait(timeout)
        finally:
            with self._lock:
                self._waiting[task_queue_id].remove(event)
                if not self._waiting[task_queue_id]:
                    del self._waiting[task_queue_id]

    def _poll(self, task_queue_id: str) -> None:
        """Poll storage for the queue while anyone waits on it, waking one caller per run."""
        stop = threading.Event()
        while not stop.wait(self._interval):
            with self._lock:
                waiting = len(self._waiting.get(task_queue_id, ()))
                if not waiting:
                    self._polled.discard(task_queue_id)
                    return
            try:
                runs = self._pending_runs(task_queue_id, min(waiting, PROBE_LIMIT))
            except Exception:  # storage hiccup: the callers' own deadline still ends their wait
                log.warning("polling task queue %s for work failed", task_queue_id, exc_info=True)
                continue
            if runs:
                self.notify(task_queue_id, runs)
