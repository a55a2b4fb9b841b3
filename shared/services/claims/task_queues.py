"""Task queues: the ones seen so far, how much work waits in each, and which runs are pending
or claimed there (listPendingTasks, listClaimedTasks: like Taskcluster's, a good
approximation of a state that changes as it is read)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

from shared.domain.errors import InvalidInput, NotFound
from shared.domain.runs import RunState
from shared.domain.task_definition import priority_rank
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.pending_table import PendingTable
from shared.storage.tables.task_queue_table import TaskQueueRecord, TaskQueueTable
from shared.storage.tables.task_table import TaskTable
from shared.services.sweeps.activity_expiry import TaskQueueExpiry, lapsed

# A queue row is refreshed at most this often per process, so a busy queue costs no writes.
REFRESH_SECONDS = 300
# A queue row is kept this much longer than the task or claim that asked, so the ones that
# follow, each expiring a moment later (clients stamp `created` and `expires` per task), find
# it long enough: without it every createTask read and wrote the row before answering.
EXPIRY_MARGIN = timedelta(days=1)


class TaskQueues:
    def __init__(self, queue_table: TaskQueueTable, pending_table: PendingTable, claim_table: ClaimTable,
                 expiry: TaskQueueExpiry, task_table: TaskTable) -> None:
        self.queue_table = queue_table
        self.task_table = task_table
        self.expiry = expiry
        self.pending_table = pending_table
        self.claim_table = claim_table
        self._refreshed: dict[str, tuple[float, datetime]] = {}   # queue -> (when, expiry written)
        self._lock = threading.Lock()

    def seen(self, task_queue_id: str, expires: str) -> None:
        """Record activity on a queue; its expiry follows the latest task or claim on it (by
        EXPIRY_MARGIN), so a queue is listed as long as it holds a task."""
        with self._lock:
            last = self._refreshed.get(task_queue_id)
        asked = parse_iso(expires)
        if last and time.monotonic() - last[0] < REFRESH_SECONDS and last[1] >= asked:
            return
        expires = to_iso(asked + EXPIRY_MARGIN)
        stored, now = self.queue_table.get(task_queue_id), utcnow()
        if stored is None or lapsed(stored.expires, now):
            # Indexed before the row is written, so no queue row is left without its expiry
            # item (a lapsed row may be deleted by the sweep before our write lands).
            self.expiry.watch(task_queue_id, expires)
        elif parse_iso(stored.expires) > parse_iso(expires):
            expires = stored.expires
        self.queue_table.put(TaskQueueRecord(task_queue_id, to_iso(now), expires))
        with self._lock:
            self._refreshed[task_queue_id] = (time.monotonic(), parse_iso(expires))

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

    def pending_runs(self, task_queue_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listPendingTasks: a page of the queue's pending runs in claim order (priority, then
        when they became pending), each with its task; `after` is where the last page ended.
        A hint whose run is no longer pending is left out, so a page may be short."""
        hints = self.pending_table.page(task_queue_id, _position(after), limit + 1)
        page = hints[:limit]
        records = self.task_table.load_many(list(dict.fromkeys(hint.task_id for hint in page)), with_definition=True)
        tasks = {}
        for record in filter(None, records):
            run = record.status.pending_run
            if run is not None and record.summary["taskQueueId"] == task_queue_id:
                tasks[record.task_id, run.run_id] = record
        listed = []
        for hint in page:   # each run once, where the hint of its priority puts it
            record = tasks.get((hint.task_id, hint.run_id))
            if record is not None and hint.priority_rank == priority_rank(record.summary["priority"]):
                del tasks[hint.task_id, hint.run_id]
                listed.append({"taskId": hint.task_id, "runId": hint.run_id, "task": record.definition,
                               "inserted": record.status.pending_run.scheduled})
        last = f"{page[-1].partition}\n{page[-1].row_key}" if len(hints) > limit else None
        return {"tasks": listed}, last

    def claimed_runs(self, task_queue_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listClaimedTasks: a page of the queue's claimed runs, in taskId order (Taskcluster
        lists them oldest claim first), each with its task and worker."""
        rows = self.claim_table.page(task_queue_id, after, limit + 1)
        page = rows[:limit]
        task_ids = list(dict.fromkeys(row.task_id for row in page))
        records = dict(zip(task_ids, self.task_table.load_many(task_ids, with_definition=True)))
        listed = []
        for row in page:
            record = records.get(row.task_id)
            run = record.status.run(row.run_id) if record is not None else None
            if run is not None and run.state is RunState.RUNNING and \
                    (run.worker_group, run.worker_id) == (row.worker_group, row.worker_id):
                listed.append({"taskId": row.task_id, "runId": row.run_id, "workerGroup": row.worker_group,
                               "workerId": row.worker_id, "claimed": run.started, "task": record.definition})
        return {"tasks": listed}, page[-1].row_key if len(rows) > limit else None


def _position(after: str) -> tuple[str, str] | None:
    """A pending listing's place: the (partition, row key) of the last hint it read."""
    if not after:
        return None
    partition, newline, row_key = after.partition("\n")
    if not newline:
        raise InvalidInput("continuationToken: it was not issued by listPendingTasks")
    return partition, row_key


def _render(record: TaskQueueRecord) -> dict:
    return {"taskQueueId": record.task_queue_id, "expires": record.expires,
            "lastDateActive": record.last_date_active, "description": "", "stability": "experimental"}
