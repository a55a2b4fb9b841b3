"""Whether anything serves a task queue: what the watchdog asks before it reports pending
tasks as `no-workers`.

`WorkerPresence` is the port: one method. The Queue's own answer (`SeenWorkers`) is what it
knows without a worker manager: a worker that called claimWork on the queue lately, and is
not quarantined. A worker manager answers better (a pool for the queue that can start a
worker is presence even when no worker runs: a pool scaled to zero serves its queue), and is
handed to the watchdog in its place at construction (`shared/services/wiring.py`), falling
back on this one for queues it has no pool for (see docs/watchdog.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shared.domain.timestamps import parse_iso, to_iso
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.worker_table import WorkerTable

LOOKED_AT = 100   # workers of a queue read at most to find one that is not quarantined


@dataclass(frozen=True)
class Presence:
    served: bool
    detail: str   # what serves the queue, or why nothing does: shown with the finding


class WorkerPresence(Protocol):
    def presence(self, task_queue_id: str, since: datetime, now: datetime) -> Presence:
        """Whether the queue is served: by a worker seen since `since`, or by whatever else
        the implementation knows (a worker pool that can start one)."""
        ...


class SeenWorkers:
    """Presence as the Queue knows it, from the queue's partitions of the Workers table: a
    worker whose claimWork moved its `lastDateActive` since `since` (an idle worker's moves
    at least every minute), or, failing that, a run of the queue whose claim a worker keeps
    alive (a busy worker calls reclaimTask, not claimWork, until its task is done)."""

    def __init__(self, worker_table: WorkerTable, claim_table: ClaimTable) -> None:
        self.worker_table = worker_table
        self.claim_table = claim_table

    def presence(self, task_queue_id: str, since: datetime, now: datetime) -> Presence:
        workers = self.worker_table.active_since(task_queue_id, to_iso(since), LOOKED_AT)
        working = [worker for worker in workers
                   if not worker.quarantine_until or parse_iso(worker.quarantine_until) <= now]
        if working:
            latest = max(working, key=lambda worker: worker.last_date_active)
            return Presence(True, f"worker {latest.worker_group}/{latest.worker_id} claimed at "
                                  f"{latest.last_date_active}")
        busy = self.claim_table.live(task_queue_id, to_iso(now), 1)
        if busy:
            return Presence(True, f"worker {busy[0].worker_group}/{busy[0].worker_id} holds a claim until "
                                  f"{busy[0].taken_until}")
        quarantined = f" ({len(workers)} seen, all quarantined)" if workers else ""
        # Said the same way at every look (no times), so that a verdict that stands is not new.
        return Presence(False, f"no worker claimed in the last "
                               f"{(now - since).total_seconds():g} s and none holds a claim{quarantined}")
