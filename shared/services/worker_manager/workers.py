"""The worker manager's workers: worker, listWorkersForWorkerPool, createWorker and
updateWorker (static pools: workers people start themselves), removeWorker and
shouldWorkerTerminate, as Taskcluster's worker-manager answers them.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from shared.domain.errors import InputError, NotFound
from shared.domain.timestamps import normalize_iso, parse_iso, to_iso
from shared.domain.worker_manager_events import WORKER_RUNNING
from shared.domain.workers import WorkerState
from shared.providers.registry import Providers
from shared.providers.static import StaticProvider
from shared.services.worker_manager.removed_workers import RemovedWorkers
from shared.services.worker_manager.worker_pools import WorkerPools
from shared.services.worker_manager.worker_states import WorkerStates
from shared.storage.errors import AlreadyExists
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, row_key

REMOVED_BY_API = "workerManager.removeWorker API call"


def render(worker: PoolWorkerRecord) -> dict:
    """worker-full.json."""
    return {"workerPoolId": worker.worker_pool_id, "workerGroup": worker.worker_group,
            "workerId": worker.worker_id, "providerId": worker.provider_id, "created": worker.created,
            "expires": worker.expires, "state": worker.state.value, "capacity": worker.capacity,
            "lastChecked": worker.last_checked, "lastModified": worker.last_modified}


def _static_secret(body: dict) -> str:
    """The schema leaves `providerInfo` out of what is required (it is the provider's); the
    static provider requires its secret, as Taskcluster's does (400 InputError)."""
    secret = body.get("providerInfo", {}).get("staticSecret")
    if not secret:
        raise InputError("no worker staticSecret provided")
    return secret


class PoolWorkers:
    def __init__(self, states: WorkerStates, pools: WorkerPools, providers: Providers,
                 removed: RemovedWorkers) -> None:
        self.states = states
        self.pools = pools
        self.providers = providers
        self.removed = removed

    def get(self, worker_pool_id: str, worker_group: str, worker_id: str) -> dict:
        return render(self.states.existing(worker_pool_id, worker_group, worker_id))

    def list(self, worker_pool_id: str, after: str, limit: int, state: str | None = None,
             worker_group: str | None = None) -> tuple[dict, str | None]:
        """A page of the pool's workers (of `state`, of `worker_group`) in key order."""
        self.pools.load(worker_pool_id)
        workers = self.states.table.page(worker_pool_id, after, limit + 1, state, worker_group)
        last = workers[limit - 1] if len(workers) > limit else None
        return ({"workers": [render(worker) for worker in workers[:limit]]},
                row_key(last.worker_group, last.worker_id) if last else None)

    # --- static workers

    def create(self, worker_pool_id: str, worker_group: str, worker_id: str, body: dict, now: datetime) -> dict:
        pool = self._static_pool(worker_pool_id, "createWorker")
        expires = normalize_iso(body["expires"])
        if parse_iso(expires) <= now:
            raise InputError("worker.expires must be in the future")
        secret = _static_secret(body)
        worker = PoolWorkerRecord(worker_pool_id, worker_group, worker_id, pool.provider_id, WorkerState.RUNNING,
                                  body.get("capacity", 1), to_iso(now), to_iso(now), to_iso(now), expires,
                                  StaticProvider.provider_data(secret))
        worker = self.states.announced(worker, WORKER_RUNNING, now)
        try:
            saved = self.states.table.insert(worker)
        except AlreadyExists:
            # Taskcluster's static provider: the same secret again is answered with the worker
            # as it is (a request whose answer was lost); another secret is the caller's error.
            existing = self.states.existing(worker_pool_id, worker_group, worker_id)
            if existing.provider_id == pool.provider_id and StaticProvider.same_secret(existing.provider_data, secret):
                return render(existing)
            raise InputError("worker already exists") from None
        self.states.publisher.written(self.states.table, saved)
        return render(saved)

    def update(self, worker_pool_id: str, worker_group: str, worker_id: str, body: dict, now: datetime) -> dict:
        """updateWorker: a static worker's expiry (which may be past: expired at once),
        capacity and secret."""
        self._static_pool(worker_pool_id, "updateWorker")
        worker = self.states.existing(worker_pool_id, worker_group, worker_id)
        changes = {"expires": normalize_iso(body["expires"]), "capacity": body.get("capacity", 1),
                   "provider_data": StaticProvider.provider_data(_static_secret(body)),
                   "last_modified": to_iso(now)}
        return render(self.states.change(worker, lambda current: replace(current, **changes)))

    def _static_pool(self, worker_pool_id: str, call: str):
        pool = self.pools.load(worker_pool_id).pool
        provider = self.providers.get(pool.provider_id)
        if provider is None:
            raise NotFound(f"Provider {pool.provider_id} for worker pool {worker_pool_id} does not exist")
        if provider.starts_workers or provider.provider_type != StaticProvider.provider_type:
            raise InputError(f"Provider {pool.provider_id} of worker pool {worker_pool_id} does not support {call}: "
                             "it starts its workers itself")
        return pool

    # --- any worker

    def remove(self, worker_pool_id: str, worker_group: str, worker_id: str, now: datetime) -> dict:
        """removeWorker: taken down, its runs released at once (see `removed_workers`)."""
        worker = self.states.existing(worker_pool_id, worker_group, worker_id)
        self.removed.remove(worker, now, REMOVED_BY_API)
        return {}

    def should_terminate(self, worker_pool_id: str, worker_group: str, worker_id: str) -> dict:
        worker = self.states.existing(worker_pool_id, worker_group, worker_id)
        if worker.state in (WorkerState.STOPPING, WorkerState.STOPPED):
            return {"terminate": True, "reason": f"worker is {worker.state.value}"}
        if worker.should_terminate:
            return {"terminate": True, "reason": worker.should_terminate}
        return {"terminate": False, "reason": "none"}
