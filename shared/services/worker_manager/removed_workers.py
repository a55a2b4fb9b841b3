"""Taking workers down, and the removed-worker resolver: the runs of a worker that is removed,
or that its provider finds gone, are resolved `exception`/`worker-shutdown` at once (and
retried while retries last), instead of waiting up to a claim's length for the claim to
expire (Taskcluster issue 7472). The runs are those the queue's claim rows say the worker
holds; a worker that registered is also quarantined in the queue, so that no claimWork of
its, even one already waiting, gets it another task.

Removing a worker its provider started moves it to `stopping` and asks the provider to
stop it; it becomes `stopped` when the provider finds it gone (the provisioner looks a few
seconds later). A static worker, which nothing here can reach, is `stopped` at once.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from shared.domain.timestamps import parse_iso, to_iso
from shared.domain.workers import WorkerState
from shared.services.claims.workers import Workers as QueueWorkers
from shared.providers.base import ProviderError, WorkerRef
from shared.providers.registry import Providers
from shared.services.worker_manager.wake_ups import WakeUps
from shared.services.worker_manager.worker_states import WorkerStates
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.pool_worker_table import PoolWorkerRecord

log = logging.getLogger("worker_manager.workers")
# Seconds after a removal before the provisioner looks whether the worker is gone.
LOOK_AGAIN = 3.0
# A removed worker is shut out of the queue at least this long (a claimWork it sent just
# before its credentials expired may still be waiting).
SHUT_OUT_AT_LEAST = timedelta(minutes=10)


def ref_of(worker: PoolWorkerRecord) -> WorkerRef:
    return WorkerRef(worker.worker_pool_id, worker.worker_group, worker.worker_id, worker.provider_data)


class RemovedWorkers:
    def __init__(self, states: WorkerStates, providers: Providers, claim_table: ClaimTable,
                 queue_workers: QueueWorkers, wake_ups: WakeUps) -> None:
        self.states = states
        self.providers = providers
        self.claim_table = claim_table
        self.queue_workers = queue_workers
        self.wake_ups = wake_ups

    def remove(self, worker: PoolWorkerRecord, now: datetime, reason: str) -> PoolWorkerRecord:
        """Take the worker down and release its runs; the worker as it ends up."""
        if worker.state is WorkerState.STOPPED:
            return worker
        provider = self.providers.of_worker(worker.provider_id)
        target = WorkerState.STOPPING if provider.starts_workers else WorkerState.STOPPED
        worker = self.states.move(worker, target, now, reason)
        if provider.starts_workers:
            try:
                provider.stop_worker(ref_of(worker))
            except ProviderError as error:   # the provisioner stops it again at its next look
                log.warning("stopping worker %s failed (%s): %s", worker.name, error.kind, error.message)
        self.release(worker, now, "removed")
        self.wake_ups.room_freed(worker.worker_pool_id)
        if target is WorkerState.STOPPING:
            self.wake_ups.request(worker.worker_pool_id, delay=LOOK_AGAIN, force=True)
        return worker

    def remove_again(self, worker: PoolWorkerRecord) -> None:
        """A stopping worker still there: ask its provider once more (idempotent)."""
        try:
            self.providers.of_worker(worker.provider_id).stop_worker(ref_of(worker))
        except ProviderError as error:
            log.warning("stopping worker %s failed (%s): %s", worker.name, error.kind, error.message)

    def gone(self, worker: PoolWorkerRecord, now: datetime, reason: str) -> PoolWorkerRecord:
        """Its provider found the worker gone: its runs released (a removed one's were, and
        it was shut out then), and it is stopped."""
        if worker.state is not WorkerState.STOPPING:
            self.release(worker, now, "gone")
        self.wake_ups.room_freed(worker.worker_pool_id)
        return self.states.move(worker, WorkerState.STOPPED, now, reason)

    def release(self, worker: PoolWorkerRecord, now: datetime, why: str) -> None:
        """Resolve the runs the worker holds as worker-shutdown. A worker our provider
        started that registered (it has credentials) is also shut out of the queue until its
        credentials expire: a claimWork it sent before going (a long poll still open) must
        not hand it a task that nobody would then release. A static worker's people may
        bring it back under the same id at once: only its runs are released."""
        pool, group, worker_id = worker.worker_pool_id, worker.worker_group, worker.worker_id
        if worker.terminate_after and self.providers.starts_workers(worker.provider_id):
            until = max(parse_iso(worker.terminate_after), now + SHUT_OUT_AT_LEAST)
            self.queue_workers.shut_out(pool, group, worker_id, to_iso(until), why, now)
            return
        runs = self.claim_table.held_by(pool, group, worker_id)
        if runs:
            self.queue_workers.release(pool, group, worker_id, runs, now, why)
