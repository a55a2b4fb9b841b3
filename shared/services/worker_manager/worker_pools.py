"""Worker pools: createWorkerPool, updateWorkerPool, deleteWorkerPool, workerPool,
listWorkerPools, workerPoolStats, listWorkerPoolsStats, listWorkerPoolLaunchConfigs,
listProviders, reportWorkerError and workerPoolErrorStats, with Taskcluster's semantics.

A pool's config is checked against its provider's schema (400 naming the field). A
createWorkerPool repeated with the same definition is answered as the first (Taskcluster's
`WorkerPool.create` does so); with another, it is a conflict. Updating
a pool's providerId keeps the old one among its previous providers (its workers may still
register); deleting a pool hands it to the null provider, and the provisioner removes it
once its last worker has stopped. Each change is a conditional write with its event
(`worker-pool-created`, `worker-pool-updated`) in the pool's row, and wakes the pool: a
pool made for a queue with pending tasks starts workers at once, not at the next timer.
Each change is recorded in the audit history (entity type `worker-pool`) with who made it
(`by`), as Taskcluster records it: created (not a repeat answered as made), updated, deleted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Callable

from shared.domain.errors import Conflict, NotFound
from shared.domain.worker_manager_events import POOL_CREATED, POOL_UPDATED, pool_changed
from shared.domain.worker_pools import NULL_PROVIDER, WorkerPool
from shared.domain.workers import WorkerState
from shared.services.auth.audit_history import CREATED, DELETED, UPDATED, AuditHistory
from shared.services.event_publisher import EventPublisher
from shared.services.worker_manager.pool_errors import LAUNCH_CONFIG, PoolErrors
from shared.providers.registry import Providers
from shared.services.worker_manager.wake_ups import WakeUps
from shared.storage.errors import AlreadyExists
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, PoolWorkerTable
from shared.storage.tables.worker_pool_table import WorkerPoolRecord, WorkerPoolTable
from shared.validation import validate



class WorkerPools:
    def __init__(self, pool_table: WorkerPoolTable, worker_table: PoolWorkerTable, providers: Providers,
                 publisher: EventPublisher, wake_ups: WakeUps, errors: PoolErrors, audit: AuditHistory) -> None:
        self.pool_table = pool_table
        self.worker_table = worker_table
        self.providers = providers
        self.publisher = publisher
        self.wake_ups = wake_ups
        self.errors = errors
        self.audit = audit

    def find(self, worker_pool_id: str) -> WorkerPoolRecord | None:
        return self.pool_table.load(worker_pool_id)

    def failing(self, worker_pool_id: str) -> str | None:
        """Why the pool starts no workers now although it may, when its provider keeps failing
        (the provisioner backs off after errors in a row); None when its last start went well."""
        failures = self.worker_table.provisioning(worker_pool_id).failures
        if not failures:
            return None
        latest = self.errors.list(worker_pool_id, "", 1)[0]["workerPoolErrors"]
        last = f"; the last: {latest[0]['title']}" if latest else ""
        return f"fails to start workers ({failures} errors in a row{last})"

    def load(self, worker_pool_id: str) -> WorkerPoolRecord:
        record = self.find(worker_pool_id)
        if record is None:
            raise NotFound(f"Worker pool {worker_pool_id} does not exist")
        return record

    def report_error(self, worker_pool_id: str, body: dict, now: datetime) -> dict:
        """reportWorkerError: recorded with the pool's errors, the worker named in `extra`."""
        pool = self.load(worker_pool_id).pool
        group, worker_id = body["workerGroup"], body["workerId"]
        return self.errors.record(pool.worker_pool_id, pool.provider_id, body["kind"], body["title"],
                                  body["description"], {**body["extra"], "workerGroup": group, "workerId": worker_id},
                                  now, group, worker_id).to_json()

    def create(self, worker_pool_id: str, body: dict, now: datetime, *, by: str) -> dict:
        self._check_config(body)
        pool = WorkerPool.create(worker_pool_id, body, now)
        try:
            record = self.pool_table.insert(WorkerPoolRecord(pool, outbox=self._announce(POOL_CREATED, pool, None)))
        except AlreadyExists:
            existing = self.load(worker_pool_id)
            if existing.pool.same_definition(pool):   # the same request again (its answer was lost)
                return self.render(existing)
            raise Conflict(f"Worker pool {worker_pool_id} already exists") from None
        self.publisher.written(self.pool_table, record)
        return self._changed(record, CREATED, by)

    def update(self, worker_pool_id: str, body: dict, now: datetime, *, by: str) -> dict:
        self._check_config(body)
        return self._change(worker_pool_id, lambda pool: pool.updated(body, now), UPDATED, by)

    def delete(self, worker_pool_id: str, now: datetime, *, by: str) -> dict:
        """Taskcluster's: the pool is handed to the null provider (without its scope)."""
        return self._change(worker_pool_id, lambda pool: pool.deleted(now), DELETED, by)

    def _change(self, worker_pool_id: str, change, action: str, by: str) -> dict:
        def changed(record: WorkerPoolRecord) -> WorkerPoolRecord:
            pool = change(record.pool)
            if pool is record.pool:
                return record
            return replace(record, pool=pool,
                           outbox=record.outbox + self._announce(POOL_UPDATED, pool, record.pool.provider_id))
        saved, _ = self.publisher.change(self.pool_table, lambda: self.pool_table.load(worker_pool_id), changed,
                                         self.pool_table.save)
        if saved is None:
            raise NotFound(f"Worker pool {worker_pool_id} does not exist")
        return self._changed(saved, action, by)

    def _changed(self, record: WorkerPoolRecord, action: str, by: str) -> dict:
        """After a write: recorded, known to this process's wake-ups at once, and woken."""
        pool = record.pool
        self.audit.record("worker-pool", pool.worker_pool_id, by, action)
        self.wake_ups.pool_changed(pool.worker_pool_id, pool.provider_id)
        self.wake_ups.request(pool.worker_pool_id, force=True)
        return self.render(record)

    def _check_config(self, body: dict) -> None:
        if body["providerId"] == NULL_PROVIDER:
            return   # a pool being deleted keeps whatever config it had
        provider = self.providers.for_pool(body["providerId"])
        validate(provider.config_schema, body["config"], where="config")

    def _announce(self, exchange: str, pool: WorkerPool, previous: str | None) -> tuple:
        if not self.publisher.publishing:
            return ()
        return (pool_changed(exchange, pool.worker_pool_id, pool.provider_id, previous, pool.last_modified),)

    # --- reading

    def get(self, worker_pool_id: str) -> dict:
        return self.render(self.load(worker_pool_id))

    def list(self, after: str, limit: int) -> tuple[dict, str | None]:
        records = self.pool_table.page(after, limit + 1)
        return ({"workerPools": [self.render(record) for record in records[:limit]]},
                records[limit - 1].pool.worker_pool_id if len(records) > limit else None)

    def render(self, record: WorkerPoolRecord) -> dict:
        """worker-pool-full.json: the definition and the counts of its workers by state."""
        return {**record.pool.to_json(), **counts(self.worker_table.all(record.pool.worker_pool_id))}

    def stats(self, worker_pool_id: str) -> dict:
        self.load(worker_pool_id)
        return {"launchConfigStats": [{"workerPoolId": worker_pool_id, "launchConfigId": LAUNCH_CONFIG,
                                       **counts(self.worker_table.all(worker_pool_id))}]}

    def stats_page(self, after: str, limit: int) -> tuple[dict, str | None]:
        """listWorkerPoolsStats: each pool's counts and capacities by state, paged as listWorkerPools."""
        records = self.pool_table.page(after, limit + 1)
        return ({"workerPoolsStats": [{"workerPoolId": record.pool.worker_pool_id,
                                       **counts(self.worker_table.all(record.pool.worker_pool_id))}
                                      for record in records[:limit]]},
                records[limit - 1].pool.worker_pool_id if len(records) > limit else None)

    def launch_configs(self, worker_pool_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listWorkerPoolLaunchConfigs: the pool's one launch configuration, its whole config,
        never archived (a pool's config is replaced in place, so there is no archive)."""
        pool = self.load(worker_pool_id).pool
        listed = [{"launchConfigId": LAUNCH_CONFIG, "workerPoolId": worker_pool_id, "isArchived": False,
                   "configuration": pool.to_json()["config"], "created": pool.created,
                   "lastModified": pool.last_modified}] if LAUNCH_CONFIG > after else []
        return {"workerPoolLaunchConfigs": listed[:limit]}, None

    def error_stats(self, worker_pool_id: str, authorize: Callable[[str], None], now: datetime) -> dict:
        """workerPoolErrorStats: one pool's, or every pool's when `worker_pool_id` is empty,
        for which the caller needs the scope for the pool id `*` (Taskcluster's)."""
        authorize(worker_pool_id or "*")
        ids = [self.load(worker_pool_id).pool.worker_pool_id] if worker_pool_id else sorted(self.pool_table.ids())
        return {"workerPoolId": worker_pool_id, "totals": self.errors.stats(ids, now)}

    def providers_page(self, after: str, limit: int) -> tuple[dict, str | None]:
        """listProviders, paged by providerId."""
        listed = [entry for entry in self.providers.listed() if entry["providerId"] > after]
        return {"providers": listed[:limit]}, listed[limit - 1]["providerId"] if len(listed) > limit else None


def counts(workers: list[PoolWorkerRecord]) -> dict:
    """Counts and capacities by state, and the capacity of those not stopped."""
    number, capacity = Counter(), Counter()
    for worker in workers:
        number[worker.state] += 1
        capacity[worker.state] += worker.capacity
    out = {"currentCapacity": sum(capacity[state] for state in WorkerState if state is not WorkerState.STOPPED)}
    for state in WorkerState:
        out[f"{state.value}Count"], out[f"{state.value}Capacity"] = number[state], capacity[state]
    return out

