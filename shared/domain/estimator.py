"""Taskcluster's estimator: how many workers a pool should start now.

Taskcluster (services/worker-manager/src/estimator.js) computes, in units of capacity:

    idle     = max(0, existing - claimed)           idle workers will take pending tasks
    adjusted = max(0, pending - idle)                the pending tasks nobody is about to take
    desired  = clamp(adjusted * scalingRatio + existing + stopping, minCapacity, maxCapacity)
    to add   = desired - existing - stopping

where `existing` is every worker not stopping (requested ones included), and stopping
capacity counts against maxCapacity because a stopping worker still holds its machine.

Two guarantees follow, and are what this module promises (tests/domain/test_estimator.py
checks them with generated inputs): the pool never holds more than maxCapacity, and no
pending task gets two new workers.

One difference, about requested workers. Taskcluster counts them as idle capacity and, after
the clamp, subtracts them once more; at scalingRatio 1 that starves newly pending tasks until
the requested workers register (10 pending, 5 requested for 5 earlier tasks: it starts none).
Here a requested worker counts against maxCapacity and against the capacity the pending
tasks call for, once: `wanted = ceil(adjusted_by_running_idle * scalingRatio)`, of which
the requested capacity is already on its way. At scalingRatio 1 this is Taskcluster's
`desired`; at a lower ratio it stays at the ratio over repeated passes instead of creeping
up to one worker per pending task while the requested ones boot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from shared.domain.worker_pools import PoolConfig
from shared.domain.workers import WorkerState


@dataclass(frozen=True)
class PoolCapacity:
    """Capacity of a pool's workers by state (stopped workers hold none). `requested`
    includes only workers whose registrationTimeout has not passed: the caller stops the
    others, which then count as stopping."""

    running: int = 0
    requested: int = 0
    stopping: int = 0

    @classmethod
    def of(cls, workers: Iterable[tuple[WorkerState, int]]) -> PoolCapacity:
        """From `(state, capacity)` of each worker."""
        totals = {WorkerState.RUNNING: 0, WorkerState.REQUESTED: 0, WorkerState.STOPPING: 0}
        for state, capacity in workers:
            if state in totals:
                totals[state] += capacity
        return cls(totals[WorkerState.RUNNING], totals[WorkerState.REQUESTED], totals[WorkerState.STOPPING])

    @property
    def existing(self) -> int:
        """Taskcluster's existing capacity: requested and running."""
        return self.running + self.requested

    @property
    def held(self) -> int:
        """Everything counted against maxCapacity."""
        return self.running + self.requested + self.stopping


@dataclass(frozen=True)
class Estimate:
    """The estimator's figures, for the provisioner's log line, and its answer."""

    pending: int
    claimed: int
    idle_capacity: int
    adjusted_pending: int
    desired_capacity: int
    capacity_to_add: int
    workers_to_start: int


def _ceil(value: float) -> int:
    # 10 * 0.3 is 3.0000000000000004 in binary floating point: one worker too many.
    return math.ceil(round(value, 9))


def estimate(config: PoolConfig, capacity: PoolCapacity, pending: int, claimed: int) -> Estimate:
    """How many workers to start, from the queue's counts of the pool's task queue
    (`pending` tasks, `claimed` = running runs) and the capacity its workers hold.

    A new worker brings `config.capacity_per_instance`: enough workers are started to cover
    the capacity wanted, but never one whose capacity would cross maxCapacity."""
    pending, claimed = max(0, pending), max(0, claimed)
    idle = max(0, capacity.running - claimed)
    adjusted = max(0, pending - idle)
    wanted = _ceil(adjusted * config.scaling_ratio)
    desired = min(config.max_capacity, max(config.min_capacity, wanted + capacity.running + capacity.stopping))
    to_add = max(0, desired - capacity.held)
    per_worker = config.capacity_per_instance
    room = max(0, config.max_capacity - capacity.held)
    workers = min(-(-to_add // per_worker), room // per_worker)
    return Estimate(pending=pending, claimed=claimed, idle_capacity=idle, adjusted_pending=adjusted,
                    desired_capacity=desired, capacity_to_add=to_add, workers_to_start=workers)
