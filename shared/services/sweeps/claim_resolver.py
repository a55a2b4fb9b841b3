"""What happens when a claim expires: the run is resolved `exception`/`claim-expired` and
retried while retries last (Taskcluster's claim resolver).

A claim row is written with every claim (see `claim_table`) and moved by every reclaim;
the resolver sweeps the rows that came due and lets the task row decide.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from shared.domain import lifecycle
from shared.domain.runs import RunState
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.services.dependencies.resolution_messages import Resolution, ResolutionMessages
from shared.services.tasks.task_updater import TaskUpdater

log = logging.getLogger("queue.time")
# A claim row of a resolution being processed is looked at again this much later.
RECHECK = timedelta(minutes=1)


class ClaimResolver:
    """Claims past `takenUntil`, found by their claim rows (see `claim_table`).

    A due row's run is resolved `exception`/`claim-expired` (retried while retries last)
    unless the task row says otherwise: a reclaim moved `takenUntil` (the row is moved
    after it), or the run is over. A row of a run that resolved its task is the intent of
    that resolution: its handler removes the row once done, so a due one means the
    announcement may have been lost, and it is announced again.
    """

    action = "claim expired"

    def __init__(self, claim_table: ClaimTable, updater: TaskUpdater, messages: ResolutionMessages) -> None:
        self.claim_table = claim_table
        self.updater = updater
        self.messages = messages

    def sweep(self, now: datetime | None = None, max_items: int = 1000) -> int:
        """Handle the claim rows that came due; returns how many tasks changed."""
        moment = now or utcnow()
        return sum(self._handle(row, moment) for row in self.claim_table.due(to_iso(moment), max_items))

    def expired(self, task_queue_id: str, task_id: str, run_id: int, worker_group: str, worker_id: str,
                now: datetime) -> bool:
        """A run found past its `takenUntil` by another watcher (the watchdog), whose claim
        row may be gone: handled as its row would be when due; True if the task changed."""
        return bool(self._handle(ClaimRow(task_queue_id, task_id, run_id, worker_group, worker_id), now))

    def _handle(self, row: ClaimRow, now: datetime) -> int:
        changed, record = self.updater.apply_if_found(
            row.task_id, lambda status: lifecycle.expire_claim(status, row.run_id, now), self.action)
        run = record.status.run(row.run_id) if record else None
        resolution = Resolution.of(record, row.run_id) if run else None
        if resolution and (resolution.worker_group, resolution.worker_id) == (row.worker_group, row.worker_id):
            if not changed:   # resolved earlier: its handler may never have run
                log.warning("task %s run %s: resolution announced again (its claim row is still here)",
                            row.task_id, row.run_id, extra={"taskId": row.task_id, "repair": "task-resolved"})
                self.messages.announce(resolution)
            self.claim_table.move(row, to_iso(now + RECHECK))
        elif run and run.state is RunState.RUNNING and (run.worker_group, run.worker_id) == \
                (row.worker_group, row.worker_id):
            self.claim_table.move(row, run.taken_until)   # reclaimed: the row had not followed yet
        else:
            self.claim_table.remove([row])   # retried, or a claim that lost its race, or a task gone
        if changed:
            log.info("task %s: %s", row.task_id, self.action, extra={"taskId": row.task_id, "action": self.action})
        return int(changed)
