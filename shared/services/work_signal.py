"""Wakes long-polling claimWork calls in this process as soon as their queue gets work.

Other processes' work is found by polling storage; this only makes the common case fast.
"""

from __future__ import annotations

import threading
from collections import defaultdict


class WorkSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, set[threading.Event]] = defaultdict(set)

    def notify(self, task_queue_id: str) -> None:
        with self._lock:
            for event in self._events.get(task_queue_id, ()):
                event.set()

    def wait(self, task_queue_id: str, timeout: float) -> bool:
        event = threading.Event()
        with self._lock:
            self._events[task_queue_id].add(event)
        try:
            return event.wait(timeout)
        finally:
            with self._lock:
                self._events[task_queue_id].discard(event)
                if not self._events[task_queue_id]:
                    del self._events[task_queue_id]
