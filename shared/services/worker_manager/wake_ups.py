"""Waking the provisioner for a pool when a task becomes pending there, coalesced.

Seed 003 names the risk: "if available work for target t, notify worker manager to look for
workers for target t. Risk of fanout here". A task made pending in this process (created,
scheduled, retried: every path goes through the work signal) reaches `made_pending`, on the
request's own thread, which therefore only looks at memory:

- a task queue that is no pool's, or whose pool's provider starts nothing (static, deleted),
  costs a dictionary look-up; the pools are read at most every REFRESH seconds, in the
  background, and once, when this process first needs them;
- a pool already woken and not yet provisioned since is not woken again: one message for
  a burst, however many tasks it has (until its pass begins, or HOLD seconds if that pass
  runs in another process and this one never hears of it);
- a pool whose last pass found it full (at maxCapacity) is not woken for FULL_HOLD seconds,
  unless a worker leaves it meanwhile (`room_freed`): its workers will take the tasks.

A wake-up is a message `{"workerPoolId", "requested"}` on the provisioner's storage queue,
sent from a thread of its own; the queue-triggered provisioner skips a message that a pass
begun after it was sent has covered. What a lost wake-up misses, the timer-triggered pass
finds.
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
import time
from datetime import datetime, timedelta
from typing import Callable

from shared.domain.timestamps import to_iso, utcnow
from shared.services.claims.work_signal import WorkSignal
from shared.storage.client.message_queue import MessageQueue

log = logging.getLogger("worker_manager.wake_ups")
REFRESH = 5.0      # seconds the pools read are trusted before they are read again
HOLD = 3.0         # seconds a wake-up sent stands for the pass it asked for
FULL_HOLD = 10.0   # seconds a pool found full is not woken for new pending tasks


class WakeUps:
    def __init__(self, messages: MessageQueue, read_pools: Callable[[], dict[str, str]],
                 starts_workers: Callable[[str], bool], signal: WorkSignal | None = None) -> None:
        """`read_pools()`: every pool's providerId by pool id; `starts_workers(providerId)`."""
        self.messages = messages
        self._read_pools = read_pools
        self._starts_workers = starts_workers
        self._lock = threading.Lock()
        self._pools: dict[str, str] | None = None
        self._read_at = 0.0
        self._reading = False
        self._sent: dict[str, tuple[float, datetime]] = {}   # pool -> (monotonic, wall clock) of its wake-up
        self._full_until: dict[str, float] = {}
        self._outgoing: queue_module.SimpleQueue = queue_module.SimpleQueue()
        self._sender: threading.Thread | None = None
        if signal is not None:
            signal.on_made_here(self.made_pending)

    def made_pending(self, task_queue_id: str, hints: list) -> None:
        """The work signal's listener: runs of `task_queue_id` were made pending here."""
        self.request(task_queue_id)

    def request(self, worker_pool_id: str, delay: float = 0.0, force: bool = False) -> bool:
        """Wake the pool's provisioner (after `delay` seconds), unless it needs no waking (see
        the module's docstring; `force`: whatever this process knows). Whether a wake-up goes."""
        provider_id = self._known().get(worker_pool_id)
        if provider_id is None or not self._starts_workers(provider_id):
            return False
        now = time.monotonic()
        with self._lock:
            sent = self._sent.get(worker_pool_id)
            if not force and (sent and now - sent[0] < HOLD or self._full_until.get(worker_pool_id, 0) > now):
                return False
            requested = utcnow() + timedelta(seconds=delay)
            self._sent[worker_pool_id] = (now, requested)
        self._outgoing.put((worker_pool_id, requested, delay))
        self._start_sender()
        return True

    def pass_began(self, worker_pool_id: str, began: datetime) -> None:
        """A pass of the pool began at `began`: a wake-up sent before it is answered."""
        with self._lock:
            sent = self._sent.get(worker_pool_id)
            if sent and sent[1] <= began:
                del self._sent[worker_pool_id]

    def passed(self, worker_pool_id: str, full: bool) -> None:
        """A pass of the pool ended, finding it `full` (at maxCapacity) or not."""
        with self._lock:
            if full:
                self._full_until[worker_pool_id] = time.monotonic() + FULL_HOLD
            else:
                self._full_until.pop(worker_pool_id, None)

    def room_freed(self, worker_pool_id: str) -> None:
        """A worker of the pool left: pending tasks may need another."""
        with self._lock:
            self._full_until.pop(worker_pool_id, None)

    def pool_changed(self, worker_pool_id: str, provider_id: str | None) -> None:
        """This process created, updated (None: deleted for good) a pool: known at once."""
        pools = dict(self._known())
        if provider_id is None:
            pools.pop(worker_pool_id, None)
        else:
            pools[worker_pool_id] = provider_id
        with self._lock:
            self._pools = pools
            self._full_until.pop(worker_pool_id, None)

    def _known(self) -> dict[str, str]:
        with self._lock:
            pools, stale = self._pools, time.monotonic() - self._read_at > REFRESH
            reading = self._reading
            if pools is not None and stale and not reading:
                self._reading = True
        if pools is None:
            return self._refresh()
        if stale and not reading:
            threading.Thread(target=self._refresh, name="wake-ups-pools", daemon=True).start()
        return pools

    def _refresh(self) -> dict[str, str]:
        try:
            pools = self._read_pools()
        except Exception:   # storage unreachable: the timer's pass provisions meanwhile
            log.warning("reading the worker pools failed; wake-ups wait for the next read", exc_info=True)
            pools = self._pools or {}
        with self._lock:
            self._pools, self._read_at, self._reading = pools, time.monotonic(), False
        return pools

    def _start_sender(self) -> None:
        with self._lock:
            if self._sender is None:
                self._sender = threading.Thread(target=self._send_forever, name="wake-ups", daemon=True)
                self._sender.start()

    def _send_forever(self) -> None:
        while True:
            worker_pool_id, requested, delay = self._outgoing.get()
            try:
                self.messages.send({"workerPoolId": worker_pool_id, "requested": to_iso(requested)},
                                   timedelta(seconds=delay))
            except Exception:   # not sent: the next pending task (or the timer) wakes the pool
                log.warning("waking the provisioner of %s failed", worker_pool_id, exc_info=True)
                with self._lock:
                    self._sent.pop(worker_pool_id, None)
