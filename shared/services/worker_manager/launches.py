"""Workers about to be started, recorded before they are, and what became of each start.

Each new worker gets an id, a group (its provider's: `local`, the Azure region), and a
single-use registration token whose digest goes into its record, which is written
`requested` (with its `worker-requested` event) before the provider is asked for anything:
a worker the provider starts is always one the pool already counts. After the start, a
started worker's record keeps what its provider needs to find it again (`provider_data`);
a worker the provider did not start is `stopped` at once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from shared.domain.timestamps import to_iso
from shared.domain.worker_manager_events import WORKER_REQUESTED
from shared.domain.worker_pools import WorkerPool, split_worker_pool_id
from shared.domain.workers import WorkerState, new_worker_id
from shared.providers.base import Registration, StartOutcome, WorkerLaunch
from shared.providers.registry import Providers
from shared.domain.registration import issue_token
from shared.services.worker_manager.worker_states import STOPPED_KEPT, WorkerStates
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, ProvisioningRecord

Prepared = list[tuple[WorkerLaunch, PoolWorkerRecord]]


class Launches:
    def __init__(self, states: WorkerStates, providers: Providers, root_url: str) -> None:
        self.states = states
        self.providers = providers
        self.root_url = root_url

    def record(self, pool: WorkerPool, state: ProvisioningRecord, count: int, capacity: int, now: datetime
               ) -> tuple[ProvisioningRecord, Prepared]:
        """Record `count` workers of `capacity` requested, with the pass's provisioning row as
        `state` read it (ChangedSinceRead if another pass took it since); the row as written,
        and each worker's launch with its record."""
        provider = self.providers.get(pool.provider_id)
        group = getattr(provider, "worker_group", pool.provider_id)
        lifetime = timedelta(seconds=pool.pool_config.lifecycle.registration_timeout)
        prefix = split_worker_pool_id(pool.worker_pool_id)[1][:20]
        launches, records = [], []
        for _ in range(count):
            worker_id = new_worker_id(prefix)
            token = issue_token(pool.worker_pool_id, group, worker_id, now, lifetime)
            record = PoolWorkerRecord(pool.worker_pool_id, group, worker_id, pool.provider_id, WorkerState.REQUESTED,
                                      capacity, to_iso(now), to_iso(now), to_iso(now),
                                      to_iso(now + lifetime + STOPPED_KEPT), token=token.record.to_json())
            records.append(self.states.announced(record, WORKER_REQUESTED, now))
            launches.append(WorkerLaunch(Registration(self.root_url, pool.worker_pool_id, pool.provider_id, group,
                                                      worker_id, token.token), capacity))
        state, saved = self.states.table.record_requested(state, records)
        for record in saved:
            self.states.publisher.written(self.states.table, record)
        return state, list(zip(launches, saved))

    def started(self, prepared: Prepared, outcome: StartOutcome, now: datetime) -> None:
        """Keep each started worker's provider data; stop those that were not started."""
        data = {started.worker_id: started.provider_data for started in outcome.started}
        for launch, record in prepared:
            if launch.worker_id in data:
                self.states.change(record, lambda current, found=data[launch.worker_id]:
                                   replace(current, provider_data=dict(found)))
            else:
                why = f"not started: {outcome.error.kind}" if outcome.error else "not started"
                self.states.move(record, WorkerState.STOPPED, now, why)
