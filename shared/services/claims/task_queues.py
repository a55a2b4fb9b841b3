"""Task queues: the ones seen so far, and how much work waits in each."""

from __future__ import annotations

import threading
import time
from datetime import datetime

from shared.domain.errors import NotFound
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.pending_table import PendingTable
from shared.storage.tables.task_queue_table import TaskQueueRecord, TaskQueueTable
from shared.services.sweeps.activity_expiry import TaskQueueExpiry, lapsed

# A queue row is refreshed at most this often per process, so a busy queue costs no writes.
REFRESH_SECONDS = 300


class TaskQueues:
    def __init__(self, queue_table: TaskQueueTable, pending_table: PendingTable, claim_table: ClaimTable,
                 expiry: TaskQueueExpiry) -> None:
        self.queue_table = queue_table
        self.expiry = expiry
        self.pending_table = pending_table
        self.claim_table = claim_table
        self._refreshed: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def seen(self, task_queue_id: str, expires: str) -> None:
        """Record activity on a queue; its expiry follows the latest task or claim on it."""
        with self._lock:
            last = self._refreshed.get(task_queue_id)
        if last and time.monotonic() - last[0] < REFRESH_SECONDS and last[1] >= expires:
            return
        stored, now = self.queue_table.get(task_queue_id), utcnow()
        if stored is None or lapsed(stored.expires, now):
            # Indexed before the row is written, so no queue row is left without its expiry
            # item (a lapsed row may be deleted by the sweep before our write lands).
            self.expiry.watch(task_queue_id, expires)
        elif parse_iso(stored.expires) > parse_iso(expires):
            expires = stored.expires
        self.queue_table.put(TaskQueueRecord(task_queue_id, to_iso(now), expires))
        with self._lock:
            self._refreshed[task_queue_id] = (time.monotonic(), expires)

    def get(self, task_queue_id: str, now: datetime) -> dict:
        record = self.queue_table.get(task_queue_id)
        if record is None or lapsed(record.expires, now):
            raise NotFound(f"Task queue {task_queue_id} not found")
        return _render(record)

    def list(self, after: str, limit: int, now: datetime) -> tuple[dict, str | None]:
        """listTaskQueues: a page of the task queues after `after`, and its last when more follow."""
        records = self.queue_table.page(after, limit + 1)
        out = {"taskQueues": [_render(record) for record in records[:limit] if not lapsed(record.expires, now)]}
        return out, records[limit - 1].task_queue_id if len(records) > limit else None

    def counts(self, task_queue_id: str) -> dict:
        out = self.pending_count(task_queue_id)
        out["claimedTasks"] = self.claim_table.count(task_queue_id)
        return out

    def pending_count(self, task_queue_id: str) -> dict:
        provisioner_id, worker_type = task_queue_id.split("/", 1)
        return {"provisionerId": provisioner_id, "workerType": worker_type, "taskQueueId": task_queue_id,
                "pendingTasks": self.pending_table.count(task_queue_id)}


def _render(record: TaskQueueRecord) -> dict:
    return {"taskQueueId": record.task_queue_id, "expires": record.expires,
            "lastDateActive": record.last_date_active, "description": "", "stability": "experimental"}
