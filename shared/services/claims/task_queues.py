"""Task queues: the ones seen so far, how much work waits in each, and which runs are pending
or claimed there (listPendingTasks, listClaimedTasks: like Taskcluster's, a good
approximation of a state that changes as it is read).

Provisioners and worker types (Taskcluster's deprecated calls) are views of the task queues,
as in Taskcluster since it stopped keeping them apart: a taskQueueId is
`<provisionerId>/<workerType>`; a provisioner lives as long as its latest queue and was last
active when its latest active queue was.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

from shared.domain.errors import NotFound
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
DECLARED_LIFETIME = timedelta(days=5)
PROVISIONER_READ = 1000   # queue rows read at a time to gather provisioners


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

    def seen(self, task_queue_id: str, expires: str, description: str | None = None,
             stability: str | None = None) -> None:
        """Record activity on a queue; its expiry follows the latest task or claim on it (by
        EXPIRY_MARGIN), so a queue is listed as long as it holds a task. `description` and
        `stability` (declareWorkerType's) replace the stored ones when given."""
        with self._lock:
            last = self._refreshed.get(task_queue_id)
        asked = parse_iso(expires)
        declared = description is not None or stability is not None
        if last and time.monotonic() - last[0] < REFRESH_SECONDS and last[1] >= asked and not declared:
            return
        expires = to_iso(asked + EXPIRY_MARGIN)
        stored, now = self.queue_table.get(task_queue_id), utcnow()
        if stored is None or lapsed(stored.expires, now):
            # Indexed before the row is written, so no queue row is left without its expiry
            # item (a lapsed row may be deleted by the sweep before our write lands).
            self.expiry.watch(task_queue_id, expires)
        elif parse_iso(stored.expires) > parse_iso(expires):
            expires = stored.expires
        self.queue_table.put(TaskQueueRecord(task_queue_id, to_iso(now), expires, description, stability))
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

    def declare_worker_type(self, provisioner_id: str, worker_type: str, details: dict, now: datetime) -> dict:
        """declareWorkerType (deprecated): the queue seen, with the description and stability
        given, kept at least until `expires` (five days from now by default, as Taskcluster's)."""
        expires = details.get("expires") or to_iso(now + DECLARED_LIFETIME)
        self.seen(f"{provisioner_id}/{worker_type}", expires, details.get("description"), details.get("stability"))
        return self.worker_type(provisioner_id, worker_type, now)

    def worker_type(self, provisioner_id: str, worker_type: str, now: datetime) -> dict:
        """getWorkerType: the task queue `<provisionerId>/<workerType>`."""
        record = self.queue_table.get(f"{provisioner_id}/{worker_type}")
        if record is None or lapsed(record.expires, now):
            raise NotFound(f"Worker-type {worker_type} with provisioner {provisioner_id} not found")
        return {**_worker_type(record), "actions": []}   # listed without, as in Taskcluster

    def worker_types(self, provisioner_id: str, after: str, limit: int, now: datetime) -> tuple[dict, str | None]:
        """listWorkerTypes: a page of the provisioner's queues (none for one never seen)."""
        records = self.queue_table.page_of_provisioner(provisioner_id, after, limit + 1)
        shown = [_worker_type(record) for record in records[:limit] if not lapsed(record.expires, now)]
        return {"workerTypes": shown}, _split(records[limit - 1].task_queue_id)[1] if len(records) > limit else None

    def provisioner(self, provisioner_id: str, now: datetime) -> dict:
        """getProvisioner: what the provisioner's queues say of it."""
        records = self._all_of(provisioner_id, now)
        if not records:
            raise NotFound(f"Provisioner {provisioner_id} not found")
        return _provisioner(provisioner_id, records)

    def provisioners(self, after: str, limit: int, now: datetime) -> tuple[dict, str | None]:
        """listProvisioners: a page of the provisioners of the queues, in provisionerId order,
        `after` the last provisioner of the page before."""
        found: dict[str, list[TaskQueueRecord]] = {}
        # '~' sorts after every workerType: the page starts past `after`'s own queues.
        position = f"{after}/~" if after else ""
        while len(found) <= limit:
            records = self.queue_table.page(position, PROVISIONER_READ)
            for record in records:
                if not lapsed(record.expires, now):
                    found.setdefault(_split(record.task_queue_id)[0], []).append(record)
            if len(records) < PROVISIONER_READ:
                break
            position = records[-1].task_queue_id
        names = sorted(found)
        page = names[:limit]
        return ({"provisioners": [_provisioner(name, found[name]) for name in page]},
                page[-1] if len(names) > limit else None)

    def _all_of(self, provisioner_id: str, now: datetime) -> list[TaskQueueRecord]:
        records, after = [], ""
        while True:
            read = self.queue_table.page_of_provisioner(provisioner_id, after, PROVISIONER_READ)
            records += [record for record in read if not lapsed(record.expires, now)]
            if len(read) < PROVISIONER_READ:
                return records
            after = _split(read[-1].task_queue_id)[1]

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
    """A pending listing's place: the (partition, row key) of the last hint it read; the
    first page for a token not of this listing (Taskcluster's starts over too)."""
    partition, newline, row_key = after.partition("\n")
    return (partition, row_key) if newline else None


def _render(record: TaskQueueRecord) -> dict:
    return {"taskQueueId": record.task_queue_id, "expires": record.expires,
            "lastDateActive": record.last_date_active, "description": record.description or "",
            "stability": record.stability or "experimental"}


def _split(task_queue_id: str) -> tuple[str, str]:
    provisioner_id, worker_type = task_queue_id.split("/", 1)
    return provisioner_id, worker_type


def _worker_type(record: TaskQueueRecord) -> dict:
    provisioner_id, worker_type = _split(record.task_queue_id)
    return {**_render(record), "provisionerId": provisioner_id, "workerType": worker_type}


def _provisioner(provisioner_id: str, records: list[TaskQueueRecord]) -> dict:
    """Taskcluster's provisioner of these queues: its latest expiry and activity, and the
    description and stability it gives every provisioner now."""
    return {"provisionerId": provisioner_id,
            "expires": to_iso(max(parse_iso(record.expires) for record in records)),
            "lastDateActive": to_iso(max(parse_iso(record.last_date_active) for record in records)),
            "description": "", "stability": "experimental", "actions": []}
