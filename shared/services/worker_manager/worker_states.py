"""Changing a worker's record: the one place where a worker moves between states, each move
a write conditional on the version read, with the event it announces in the record's outbox,
published right after the write (see `event_publisher`).

Events, as Taskcluster's worker-manager publishes them: `worker-requested` when a provider
is about to start a worker, `worker-running` when it registers (or a static worker is
created), `worker-removed` (with a reason) when it is taken down, `worker-stopped` once it
is gone. A move to the state the worker is in already writes and announces nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Callable

from shared.domain import workers as worker_states
from shared.domain.errors import NotFound
from shared.domain.timestamps import to_iso
from shared.domain.worker_manager_events import (
    WORKER_REMOVED, WORKER_REQUESTED, WORKER_RUNNING, WORKER_STOPPED, worker_changed,
)
from shared.domain.workers import WorkerState
from shared.services.event_publisher import EventPublisher
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, PoolWorkerTable

log = logging.getLogger("worker_manager.workers")
# How long a stopped worker stays listed (Taskcluster keeps them until they expire).
STOPPED_KEPT = timedelta(days=1)
_ANNOUNCED = {WorkerState.RUNNING: WORKER_RUNNING, WorkerState.STOPPED: WORKER_STOPPED,
              WorkerState.REQUESTED: WORKER_REQUESTED}


class WorkerStates:
    def __init__(self, table: PoolWorkerTable, publisher: EventPublisher) -> None:
        self.table = table
        self.publisher = publisher

    def load(self, worker_pool_id: str, worker_group: str, worker_id: str) -> PoolWorkerRecord | None:
        return self.table.load(worker_pool_id, worker_group, worker_id)

    def existing(self, worker_pool_id: str, worker_group: str, worker_id: str) -> PoolWorkerRecord:
        worker = self.load(worker_pool_id, worker_group, worker_id)
        if worker is None:
            raise NotFound(f"Worker {worker_group}/{worker_id} of worker pool {worker_pool_id} not found")
        return worker

    def announced(self, worker: PoolWorkerRecord, exchange: str, now: datetime,
                  reason: str | None = None) -> PoolWorkerRecord:
        """`worker` with the event of `exchange` added to its outbox (none without a bus)."""
        if not self.publisher.publishing:
            return worker
        event = worker_changed(exchange, worker.worker_pool_id, worker.provider_id, worker.worker_group,
                               worker.worker_id, worker.capacity, to_iso(now), reason)
        return replace(worker, outbox=worker.outbox + (event,))

    def change(self, worker: PoolWorkerRecord, change: Callable[[PoolWorkerRecord], PoolWorkerRecord]
               ) -> PoolWorkerRecord:
        """`change` applied to the worker as read (from `worker`, then read again whenever
        another writer got there first), written and its events published; the record as it
        ends up. NotFound if it is gone."""
        saved, _ = self.publisher.change(
            self.table, lambda: self.load(worker.worker_pool_id, worker.worker_group, worker.worker_id),
            change, self.table.save, first=worker)
        if saved is None:
            raise NotFound(f"Worker {worker.name} not found")
        return saved

    def move(self, worker: PoolWorkerRecord, target: WorkerState, now: datetime, reason: str | None = None,
             **fields) -> PoolWorkerRecord:
        """Move the worker to `target` (Conflict if that is a move back), with `fields`
        changed too; `reason` says why it is removed or stopped (in the event and the log)."""
        def moved(current: PoolWorkerRecord) -> PoolWorkerRecord:
            state = worker_states.move(current.state, target, current.name)
            if state is current.state:
                return current
            changed = replace(current, state=state, last_modified=to_iso(now), last_checked=to_iso(now), **fields)
            if state is WorkerState.STOPPED:
                changed = replace(changed, expires=to_iso(now + STOPPED_KEPT))
            if state in (WorkerState.STOPPING, WorkerState.STOPPED) and current.state is not WorkerState.STOPPING:
                changed = self.announced(changed, WORKER_REMOVED, now, reason)
            if state in _ANNOUNCED:
                changed = self.announced(changed, _ANNOUNCED[state], now, reason)
            return changed
        saved = self.change(worker, moved)
        if saved.state is not worker.state:
            log.info("worker %s: %s -> %s%s", saved.name, worker.state.value, saved.state.value,
                     f" ({reason})" if reason else "",
                     extra={"workerPoolId": saved.worker_pool_id, "workerId": saved.worker_id, "action": "move"})
        return saved
