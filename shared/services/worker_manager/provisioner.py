"""The provisioner: per pool, a pass that looks after the workers it has and starts those the
estimator asks for.

A pass of one pool:
1. takes the pool's provisioning row (a conditional write of when it began); a pass that
   loses this race, or whose wake-up a pass begun since has covered, does nothing;
2. looks after its workers (`WorkerCare`): gone ones are stopped and their runs released,
   overstayed ones taken down, surplus ones asked to terminate;
3. unless the pool is backing off, asks the estimator how many workers to start, from the
   queue's counts and the capacity its workers hold, and records them `requested` (with
   their registration tokens' digests) in one transaction with a second conditional write
   of the provisioning row: a pass that began meanwhile makes it fail, so two passes never
   both start workers on what they read, and the pool never exceeds maxCapacity;
4. starts them through the provider; a provider's error is recorded for the pool (kind
   quota-exceeded, start-refused or provider-unavailable), the workers it did not start are
   stopped, and the pool backs off, doubling with each error in a row; the others go on.

Passes come from wake-ups (`wake_ups`: a task became pending; a pool was created, changed or
had a worker removed) through the queue-triggered function, and from the timer-triggered
sweep over every pool, which also drops expired errors and workers and removes deleted
pools once their last worker has stopped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from shared.domain.estimator import PoolCapacity, estimate
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.domain.worker_pools import NULL_PROVIDER, WorkerPool
from shared.domain.workers import NOT_STOPPED
from shared.services.worker_manager.launches import Launches
from shared.services.worker_manager.pool_errors import PoolErrors
from shared.providers.base import ProviderError
from shared.providers.registry import Providers
from shared.services.worker_manager.wake_ups import WakeUps
from shared.services.worker_manager.worker_care import WorkerCare
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.storage.tables.pool_worker_table import PoolWorkerTable, ProvisioningRecord
from shared.storage.tables.worker_pool_table import WorkerPoolTable

log = logging.getLogger("worker_manager.provisioner")
FIRST_BACKOFF, LONGEST_BACKOFF = 5.0, 300.0   # seconds a pool waits after its first error, at most
TIDY_EVERY = 60.0   # seconds between two upkeeps of a pool by the timer's passes
ATTEMPTS = 5


@dataclass(frozen=True)
class PassOutcome:
    worker_pool_id: str
    ran: bool = False
    started: int = 0
    full: bool = False


class Provisioner:
    def __init__(self, pool_table: WorkerPoolTable, worker_table: PoolWorkerTable,
                 providers: Providers, care: WorkerCare, launches: Launches, errors: PoolErrors,
                 wake_ups: WakeUps, queue_counts) -> None:
        """`queue_counts(taskQueueId, pending_limit)`: (pending, claimed) of the pool's queue."""
        self.pool_table = pool_table
        self.worker_table = worker_table
        self.providers = providers
        self.care = care
        self.launches = launches
        self.errors = errors
        self.wake_ups = wake_ups
        self.queue_counts = queue_counts
        self._tidied: dict[str, float] = {}

    def handle_message(self, body: dict) -> PassOutcome:
        """A wake-up from the queue: `{"workerPoolId", "requested"}`."""
        requested = parse_iso(body["requested"]) if body.get("requested") else None
        return self.provision(body["workerPoolId"], requested)

    def provision_all(self, now: datetime | None = None) -> list[PassOutcome]:
        """The timer's pass over every pool; one pool's failure never stops the others."""
        outcomes, after = [], ""
        while True:
            records = self.pool_table.page(after, 100)
            for record in records:
                pool_id = record.pool.worker_pool_id
                try:
                    outcomes.append(self.provision(pool_id, None))
                    self._tidy(record.pool, now or utcnow())
                except Exception:   # storage or a bug: this pool waits for the next pass
                    log.exception("provisioning worker pool %s failed", pool_id)
            if len(records) < 100:
                return outcomes
            after = records[-1].pool.worker_pool_id

    def _tidy(self, pool: WorkerPool, now: datetime) -> None:
        """The pool's upkeep (expired errors and stopped workers), at most every TIDY_EVERY s."""
        last = self._tidied.get(pool.worker_pool_id)
        if last is None or time.monotonic() - last >= TIDY_EVERY:
            self._tidied[pool.worker_pool_id] = time.monotonic()
            self.care.tidy(pool, now)

    def provision(self, worker_pool_id: str, requested: datetime | None = None) -> PassOutcome:
        record = self.pool_table.load(worker_pool_id)
        if record is None:
            return PassOutcome(worker_pool_id)
        pool = record.pool
        state, began = self._begin(worker_pool_id, requested)
        if state is None:
            return PassOutcome(worker_pool_id)
        self.wake_ups.pass_began(worker_pool_id, began)
        workers = self.care.look_after(pool, self.worker_table.all(worker_pool_id, NOT_STOPPED), began)
        if workers is None:   # the pool was deleted and its last worker is gone
            return PassOutcome(worker_pool_id, ran=True)
        if pool.provider_id == NULL_PROVIDER:
            self.care.surplus(pool, workers, 0, began)
        if not self.providers.starts_workers(pool.provider_id):
            return PassOutcome(worker_pool_id, ran=True)
        config = pool.pool_config
        capacity = PoolCapacity.of((worker.state, worker.capacity) for worker in workers)
        if state.backoff_until and parse_iso(state.backoff_until) > began:
            return PassOutcome(worker_pool_id, ran=True, full=capacity.held >= config.max_capacity)
        pending, claimed = self.queue_counts(worker_pool_id, _pending_worth_counting(config, capacity))
        figures = estimate(config, capacity, pending, claimed)
        self.care.surplus(pool, workers, config.max_capacity, began)
        if figures.workers_to_start == 0:
            full = capacity.held >= config.max_capacity
            self.wake_ups.passed(worker_pool_id, full)
            return PassOutcome(worker_pool_id, ran=True, full=full)
        log.info("worker pool %s: %d pending, %d claimed, capacity running %d requested %d stopping %d: "
                 "starting %d", worker_pool_id, pending, claimed, capacity.running, capacity.requested,
                 capacity.stopping, figures.workers_to_start, extra={"workerPoolId": worker_pool_id,
                                                                     "action": "provision"})
        started, error = self._start(pool, state, figures.workers_to_start, config.capacity_per_instance, began)
        full = capacity.held + started * config.capacity_per_instance >= config.max_capacity
        self.wake_ups.passed(worker_pool_id, full)
        return PassOutcome(worker_pool_id, ran=True, started=started, full=full)

    def _begin(self, worker_pool_id: str, requested: datetime | None) -> tuple[ProvisioningRecord | None, datetime]:
        """Take the pool's pass: the provisioning row as written, or None when a pass begun
        after `requested` covers this one (or others keep taking it)."""
        for _ in range(ATTEMPTS):
            state, began = self.worker_table.provisioning(worker_pool_id), utcnow()
            if requested is not None and state.pass_began and parse_iso(state.pass_began) >= requested:
                return None, began
            try:
                return self.worker_table.save_provisioning(replace(state, pass_began=to_iso(began))), began
            except ChangedSinceRead:
                continue
        return None, utcnow()

    def _start(self, pool: WorkerPool, state: ProvisioningRecord, count: int, capacity: int,
               now: datetime) -> tuple[int, ProviderError | None]:
        provider = self.providers.get(pool.provider_id)
        try:
            state, prepared = self.launches.record(pool, state, count, capacity, now)
        except ChangedSinceRead:   # a pass that began since decides instead
            return 0, None
        outcome = provider.start_workers(pool, [launch for launch, _ in prepared])
        self.launches.started(prepared, outcome, now)
        if outcome.error is None:
            if state.failures:
                self._backoff(state, 0, now)
            return len(outcome.started), None
        error = outcome.error
        self.errors.record(pool.worker_pool_id, pool.provider_id, error.kind, error.title, error.message,
                           {**error.details, "workersNotStarted": count - len(outcome.started)}, now)
        self._backoff(state, state.failures + 1, now, error.retry_after)
        return len(outcome.started), error

    def _backoff(self, state: ProvisioningRecord, failures: int, now: datetime, retry_after: float | None = None
                 ) -> None:
        """Record `failures` errors in a row, and how long the pool waits before it starts
        workers again (then it is woken)."""
        wait = 0.0 if failures == 0 else max(retry_after or 0.0, min(LONGEST_BACKOFF,
                                                                     FIRST_BACKOFF * 2 ** (failures - 1)))
        until = to_iso(now + timedelta(seconds=wait)) if wait else ""
        change_until_saved(lambda: self.worker_table.provisioning(state.worker_pool_id),
                           lambda current: replace(current, failures=failures, backoff_until=until),
                           self.worker_table.save_provisioning, first=state)
        if wait:
            log.warning("worker pool %s backs off for %.0f s after %d errors in a row", state.worker_pool_id, wait,
                        failures, extra={"workerPoolId": state.worker_pool_id, "action": "backoff"})
            self.wake_ups.request(state.worker_pool_id, delay=wait, force=True)


def _pending_worth_counting(config, capacity: PoolCapacity) -> int:
    """Beyond this many pending tasks the estimator's answer no longer changes (it is
    clamped to maxCapacity): counting further would only cost reads."""
    ratio = max(config.scaling_ratio, 0.01)
    return capacity.running + int(config.max_capacity / ratio) + 1

