"""The worker manager's listWorkers and getWorker (Taskcluster's "Worker Metadata"): the
workers the Queue has seen claim from a pool's task queue, each with what the worker
manager knows of it (its state, capacity and provider), as Taskcluster joins its queue's
workers with its worker manager's.

A worker the Queue has not seen is not listed, whatever the worker manager knows of it
(Taskcluster's join is on the queue's rows); one the worker manager did not start is
`standalone`, of capacity 0 and provider `none`, as Taskcluster shows it.
"""

from __future__ import annotations

from datetime import datetime

from shared.services.claims.workers import Workers
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, PoolWorkerTable

STANDALONE = {"state": "standalone", "capacity": 0, "providerId": "none"}


class WorkerMetadata:
    def __init__(self, queue_workers: Workers, pool_workers: PoolWorkerTable) -> None:
        self.queue_workers = queue_workers
        self.pool_workers = pool_workers

    def list(self, provisioner_id: str, worker_type: str, after: str, limit: int, quarantined: str | None,
             worker_state: str | None, now: datetime) -> tuple[dict, str | None]:
        """A page of the queue's workers. `quarantined=true` keeps the quarantined only; `false`
        filters nothing (Taskcluster's); `worker_state` keeps those the manager has in that state."""
        pool = f"{provisioner_id}/{worker_type}"
        body, last = self.queue_workers.list(pool, after, limit, "true" if quarantined == "true" else None, now)
        managed = {(worker.worker_group, worker.worker_id): worker for worker in self.pool_workers.all(pool)}
        workers = [{**seen, "workerPoolId": pool, **_managed(managed.get((seen["workerGroup"], seen["workerId"])))}
                   for seen in body["workers"]]
        return {"workers": [worker for worker in workers if worker_state in (None, worker["state"])]}, last

    def get(self, provisioner_id: str, worker_type: str, worker_group: str, worker_id: str, now: datetime) -> dict:
        """worker-response.json: the queue's worker (404 if it has not claimed from the pool),
        `actions` and all, as Taskcluster's answers it."""
        pool = f"{provisioner_id}/{worker_type}"
        seen = self.queue_workers.get(pool, worker_group, worker_id, now)
        seen.pop("taskQueueId", None)   # the queue's name for it; this answer says workerPoolId
        return {**seen, "workerPoolId": pool,
                **_managed(self.pool_workers.load(pool, worker_group, worker_id))}


def _managed(worker: PoolWorkerRecord | None) -> dict:
    if worker is None:
        return dict(STANDALONE)
    return {"state": worker.state.value, "capacity": worker.capacity, "providerId": worker.provider_id}
