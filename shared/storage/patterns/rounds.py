"""Rounds per key, the mechanism under shared reads and shared writes: callers that come
while a key's round is in flight gather into the next one, which its first caller runs as
soon as the one ahead ends. So at most one round per key runs and one gathers, a caller
with nothing in flight runs at once, and each caller's round began after it came.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, TypeVar


class Round:
    """One round of a key: callers wait for `done`; what they share is the subclass's."""

    def __init__(self) -> None:
        self.done = threading.Event()


R = TypeVar("R", bound=Round)


class Rounds:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gathering: dict[Hashable, Round] = {}   # not started: callers join it
        self._running: dict[Hashable, Round] = {}

    def join(self, key: Hashable, new: Callable[[], R], add: Callable[[R], bool]) -> tuple[R | None, bool]:
        """Join `key`'s gathering round (a `new()` one if none), `add(round)` saying whether
        this caller fits in it (called under the lock); the round (None if the caller did not
        fit) and whether this caller leads it (then it must call `lead`)."""
        with self._lock:
            gathering = self._gathering.get(key)
            if gathering is not None:
                return (gathering, False) if add(gathering) else (None, False)
            fresh = new()
            if not add(fresh):
                return None, False
            self._gathering[key] = fresh
            return fresh, True

    def lead(self, key: Hashable, round_: Round, work: Callable[[], None]) -> None:
        """Run `work()` for the round this caller leads, once the round ahead has ended;
        whoever joins `key` from then on gathers into the next round."""
        with self._lock:
            ahead = self._running.get(key)
        if ahead is not None:
            ahead.done.wait()
        with self._lock:
            del self._gathering[key]
            self._running[key] = round_
        try:
            work()
        finally:
            with self._lock:
                del self._running[key]
            round_.done.set()
