"""Whether anything serves a task queue, as the worker manager knows it: the watchdog's
`WorkerPresence` once a worker manager runs (see `services/task_groups/worker_presence.py`).

A pool whose id is the task queue's and whose provider can start a worker (`maxCapacity`
above zero) serves the queue even when no worker runs: a pool scaled to zero is not a group
with no workers. Any other queue gets the Queue's own answer (workers started by hand, the
static provider's), and where a pool exists but cannot start one (deleted, maxCapacity 0, a
provider that starts nothing here, or one that keeps failing), the answer says why.
"""

from __future__ import annotations

from datetime import datetime

from shared.domain.worker_pools import NULL_PROVIDER, PoolConfig
from shared.providers.registry import Providers
from shared.services.task_groups.worker_presence import Presence, WorkerPresence
from shared.services.worker_manager.worker_pools import WorkerPools


class PoolPresence:
    def __init__(self, pools: WorkerPools, providers: Providers, fallback: WorkerPresence) -> None:
        self.pools = pools
        self.providers = providers
        self.fallback = fallback

    def presence(self, task_queue_id: str, since: datetime, now: datetime) -> Presence:
        record = self.pools.find(task_queue_id)
        why_not = _why_not(record.pool if record else None, self.providers)
        if record is not None and why_not is None:
            why_not = self.pools.failing(task_queue_id)
            if why_not is None:
                return Presence(True, f"worker pool {task_queue_id} ({record.pool.provider_id}) starts workers for it")
        seen = self.fallback.presence(task_queue_id, since, now)
        if seen.served:
            return seen
        pool = f"worker pool {task_queue_id} {why_not}" if record else "no worker pool known"
        return Presence(False, f"{pool}; {seen.detail}")


def _why_not(pool, providers: Providers) -> str | None:
    """Why a pool cannot start a worker for its queue; None when it can (or there is no pool)."""
    if pool is None:
        return None
    if pool.provider_id == NULL_PROVIDER:
        return "is deleted"
    if not providers.starts_workers(pool.provider_id):
        return f"has provider {pool.provider_id}, which starts no workers here"
    if PoolConfig.from_json(pool.config).max_capacity <= 0:
        return "has maxCapacity 0"
    return None
