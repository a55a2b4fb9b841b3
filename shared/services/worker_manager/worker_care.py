"""What a provisioning pass does for the workers a pool has, before it thinks of new ones.

- Each provider that started workers is asked, once per pass, which of them are alive: a
  worker it finds gone is stopped and its runs are released at once (the removed-worker
  resolver); one that went without being removed is recorded as a pool error (a worker
  that died midway).
- A worker that overstayed (never registered within registrationTimeout, did not
  reregister in time, claimed nothing for queueInactivityTimeout) is taken down; a start
  that timed out is recorded as a pool error.
- A stopping worker still alive is asked to stop again (the local provider kills one that
  outlived its grace).
- A static worker past its `expires` is stopped.
- Workers beyond what the pool may hold now (its maxCapacity lowered, or the pool deleted)
  are asked to terminate (shouldWorkerTerminate) once their task is done.
- A deleted pool whose last worker has stopped is removed, with its workers' history.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from typing import Callable

from shared.domain.timestamps import parse_iso, to_iso
from shared.domain.worker_pools import NULL_PROVIDER, WorkerPool
from shared.domain.workers import WorkerState, termination_reason
from shared.services.worker_manager.pool_errors import PoolErrors
from shared.providers.base import ProviderError, WorkerHealth
from shared.providers.registry import Providers
from shared.services.worker_manager.removed_workers import RemovedWorkers, ref_of
from shared.services.worker_manager.wake_ups import WakeUps
from shared.services.worker_manager.worker_states import WorkerStates
from shared.storage.errors import ChangedSinceRead
from shared.storage.tables.pool_worker_table import PoolWorkerRecord
from shared.storage.tables.worker_pool_table import WorkerPoolTable

log = logging.getLogger("worker_manager.provisioner")
POOL_DELETED = "worker pool deleted"
OVER_CAPACITY = "worker pool is over its maxCapacity"


class WorkerCare:
    def __init__(self, states: WorkerStates, providers: Providers, removed: RemovedWorkers, errors: PoolErrors,
                 pool_table: WorkerPoolTable, wake_ups: WakeUps,
                 last_active: Callable[[str, str, str], str | None]) -> None:
        """`last_active(pool, group, id)`: the queue's lastDateActive of the worker, if known."""
        self.states = states
        self.providers = providers
        self.removed = removed
        self.errors = errors
        self.pool_table = pool_table
        self.wake_ups = wake_ups
        self.last_active = last_active

    def look_after(self, pool: WorkerPool, workers: list[PoolWorkerRecord], now: datetime
                   ) -> list[PoolWorkerRecord] | None:
        """The pool's workers not stopped after the care above; None when the pool was a
        deleted one and is now removed."""
        by_provider: dict[str, list[PoolWorkerRecord]] = defaultdict(list)
        for worker in workers:
            by_provider[worker.provider_id].append(worker)
        kept = []
        for provider_id, own in by_provider.items():
            kept += self._look_after(pool, provider_id, own, now)
        if pool.provider_id == NULL_PROVIDER and not kept:
            return None if self._remove_pool(pool) else kept
        return kept

    def _look_after(self, pool: WorkerPool, provider_id: str, workers: list[PoolWorkerRecord], now: datetime
                    ) -> list[PoolWorkerRecord]:
        provider = self.providers.get(provider_id)
        if provider is None:
            log.warning("worker pool %s has workers of provider %s, which this deployment lacks",
                        pool.worker_pool_id, provider_id)
            return workers
        if not provider.starts_workers:
            return [worker for worker in workers if not self._expired(worker, now)]
        try:
            health = provider.check_workers([ref_of(worker) for worker in workers])
        except ProviderError as error:   # nothing concluded this time
            log.warning("worker pool %s: cannot check its %s workers (%s): %s", pool.worker_pool_id, provider_id,
                        error.kind, error.message)
            return workers
        kept = []
        for worker in workers:
            worker = self._one(pool, worker, health[ref_of(worker)], now)
            if worker.state is not WorkerState.STOPPED:
                kept.append(worker)
        return kept

    def _one(self, pool: WorkerPool, worker: PoolWorkerRecord, health: WorkerHealth,
             now: datetime) -> PoolWorkerRecord:
        unrecorded = worker.state is WorkerState.REQUESTED and not worker.provider_data   # its start may be under way
        if health is WorkerHealth.GONE and not unrecorded:
            if worker.state is not WorkerState.STOPPING:
                self.errors.record(pool.worker_pool_id, worker.provider_id, "worker-gone", "Worker gone",
                                   f"worker {worker.worker_group}/{worker.worker_id} ({worker.state.value}) is gone "
                                   "without having been removed", {"workerGroup": worker.worker_group,
                                                                    "workerId": worker.worker_id}, now,
                                   worker.worker_group, worker.worker_id)
            return self.removed.gone(worker, now, "its provider found it gone")
        if worker.state is WorkerState.STOPPING:
            self.removed.remove_again(worker)
            return worker
        reason = self._overstayed(pool, worker, now)
        if reason is None:
            return worker
        if worker.state is WorkerState.REQUESTED:
            self.errors.record(pool.worker_pool_id, worker.provider_id, "start-timed-out", "Start timed out",
                               f"worker {worker.worker_group}/{worker.worker_id} {reason}",
                               {"workerGroup": worker.worker_group, "workerId": worker.worker_id}, now,
                               worker.worker_group, worker.worker_id)
        return self.removed.remove(worker, now, reason)

    def _overstayed(self, pool: WorkerPool, worker: PoolWorkerRecord, now: datetime) -> str | None:
        lifecycle = pool.pool_config.lifecycle
        registered = parse_iso(worker.last_modified)
        last_active = None
        if worker.state is WorkerState.RUNNING and (now - registered).total_seconds() > lifecycle.queue_inactivity_timeout:
            seen = self.last_active(worker.worker_pool_id, worker.worker_group, worker.worker_id)
            last_active = max(registered, parse_iso(seen)) if seen else registered
        return termination_reason(worker.state, now, lifecycle, created=parse_iso(worker.created),
                                  terminate_after=parse_iso(worker.terminate_after) if worker.terminate_after else None,
                                  last_active=last_active)

    def _expired(self, worker: PoolWorkerRecord, now: datetime) -> bool:
        if parse_iso(worker.expires) > now:
            return False
        self.removed.remove(worker, now, "expired")
        return True

    def surplus(self, pool: WorkerPool, workers: list[PoolWorkerRecord], allowed: int, now: datetime) -> None:
        """Ask running workers beyond `allowed` capacity (the newest first) to terminate."""
        held = sum(worker.capacity for worker in workers if worker.state is not WorkerState.STOPPED)
        reason = POOL_DELETED if pool.provider_id == NULL_PROVIDER else OVER_CAPACITY
        running = [worker for worker in workers if worker.state is WorkerState.RUNNING]
        for worker in sorted(running, key=lambda w: w.created, reverse=True):
            if held <= allowed:
                return
            held -= worker.capacity
            if not worker.should_terminate:
                self.states.change(worker, lambda current: _asked(current, reason, now))
                log.info("worker %s asked to terminate: %s", worker.name, reason)

    def tidy(self, pool: WorkerPool, now: datetime) -> None:
        """The timer's upkeep of a pool: expired errors and stopped workers dropped."""
        self.errors.drop_expired(pool.worker_pool_id, now)
        for worker in self.states.table.page(pool.worker_pool_id, "", 100, WorkerState.STOPPED.value):
            if parse_iso(worker.expires) <= now:
                self._forget(worker)

    def _remove_pool(self, pool: WorkerPool) -> bool:
        """A deleted pool without workers: its history, then the pool (unless it changed)."""
        record = self.pool_table.load(pool.worker_pool_id)
        if record is None or record.pool.provider_id != NULL_PROVIDER:
            return False
        for worker in self.states.table.all(pool.worker_pool_id):
            self._forget(worker)
        try:
            self.pool_table.delete(record)
        except ChangedSinceRead:
            return False
        self.states.table.delete_provisioning(pool.worker_pool_id)
        self.wake_ups.pool_changed(pool.worker_pool_id, None)
        log.info("worker pool %s removed: it was deleted and its last worker has stopped", pool.worker_pool_id)
        return True

    def _forget(self, worker: PoolWorkerRecord) -> None:
        try:
            self.states.table.delete(worker)
        except ChangedSinceRead:
            pass


def _asked(worker: PoolWorkerRecord, reason: str, now: datetime) -> PoolWorkerRecord:
    if worker.state is not WorkerState.RUNNING or worker.should_terminate:
        return worker
    return replace(worker, should_terminate=reason, last_modified=to_iso(now))
