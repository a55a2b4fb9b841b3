"""The Workers table: the workers that claimed from a task queue, and their quarantine.

PartitionKey = the worker's bucket of its task queue (`claim_table.worker_partition`: one of
16, by a hash of the worker's name, so that a busy queue is not bound by what Azure serves
of one partition), RowKey = `~<workerGroup>.<workerId>` (neither may hold a '.'). The
partition also holds the claimed runs of its workers (see `claim_table`), whose keys all
sort before '~': a claimWork writes its worker's row and its claims' rows in one
transaction. listWorkers reads the first rows of each bucket at once and merges them in key
order; the watchdog's look at a queue's workers is one range query over its buckets. Rows
of the layout before buckets (one partition per queue) are not read: none was ever
released. A worker row is
written by the worker's own claimWork calls and by quarantineWorker, both conditionally on
its ETag. The version this process wrote or read last is remembered (see `recent_writes`),
so that a worker's next claimWork can start from it without reading the row again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import UpdateMode

from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_if_unchanged
from shared.storage.tables.claim_table import TABLE, WORKERS, in_queue, worker_partition, worker_partitions
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.buckets import first_rows_by_key
from shared.storage.patterns.queries import first_rows, row_or_none
from shared.storage.patterns.recent_writes import RecentWrites


@dataclass(frozen=True)
class WorkerRecord:
    task_queue_id: str
    worker_group: str
    worker_id: str
    first_claim: str
    last_date_active: str
    expires: str
    quarantine_until: str = ""
    quarantine_details: tuple[dict, ...] = ()
    recent_tasks: tuple[dict, ...] = ()      # {taskId, runId} of the latest claims, oldest first
    etag: str | None = field(default=None, compare=False)


class WorkerTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)
        self._recent: RecentWrites[WorkerRecord] = RecentWrites()

    def load(self, task_queue_id: str, worker_group: str, worker_id: str) -> WorkerRecord | None:
        entity = row_or_none(self._table, worker_partition(task_queue_id, worker_group, worker_id),
                             WORKERS + f"{worker_group}.{worker_id}")
        return self._remember(_record(task_queue_id, entity)) if entity is not None else None

    def last_known(self, task_queue_id: str, worker_group: str, worker_id: str) -> WorkerRecord | None:
        """The row as this process last wrote or read it, if it remembers it: possibly not
        the current version any more, so only to try a conditional write from."""
        return self._recent.get(_memory_key(task_queue_id, worker_group, worker_id))

    def insert(self, worker: WorkerRecord) -> WorkerRecord:
        try:
            meta = lost_responses.insert(self._table, _entity(worker))
        except ResourceExistsError as exc:
            raise AlreadyExists(f"{worker.worker_group}/{worker.worker_id}") from exc
        return self._remember(replace(worker, etag=meta.get("etag")))

    def save(self, worker: WorkerRecord) -> WorkerRecord:
        """Write `worker` if its row is still as read; else ChangedSinceRead."""
        try:
            meta = lost_responses.update(self._table, _entity(worker), worker.etag)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            self._recent.forget(_memory_key(worker.task_queue_id, worker.worker_group, worker.worker_id))
            raise ChangedSinceRead(f"{worker.worker_group}/{worker.worker_id}") from exc
        return self._remember(replace(worker, etag=meta.get("etag")))

    def update_operation(self, worker: WorkerRecord) -> tuple:
        """The transaction operation that writes `worker` if its row is still as read (see
        `ClaimTable.add`); `wrote` takes its answer."""
        return "update", _entity(worker), {"mode": UpdateMode.MERGE, "etag": worker.etag,
                                            "match_condition": MatchConditions.IfNotModified}

    def wrote(self, worker: WorkerRecord, answer: dict) -> WorkerRecord:
        """`worker` as the transaction of its `update_operation` wrote it."""
        return self._remember(replace(worker, etag=answer.get("etag")))

    def forget(self, worker: WorkerRecord) -> None:
        """Its transaction was refused: the version remembered is not the row's."""
        self._recent.forget(_memory_key(worker.task_queue_id, worker.worker_group, worker.worker_id))

    def _remember(self, worker: WorkerRecord) -> WorkerRecord:
        self._recent.wrote(_memory_key(worker.task_queue_id, worker.worker_group, worker.worker_id), worker)
        return worker

    def delete(self, worker: WorkerRecord) -> None:
        """Delete `worker` if its row is still as read; else ChangedSinceRead (gone already is fine)."""
        self._recent.forget(_memory_key(worker.task_queue_id, worker.worker_group, worker.worker_id))
        delete_if_unchanged(self._table, _partition(worker), WORKERS + row_key(worker), worker.etag,
                            f"{worker.worker_group}/{worker.worker_id}")

    def active_since(self, task_queue_id: str, since: str, limit: int) -> list[WorkerRecord]:
        """Up to `limit` of the queue's workers whose last claimWork was at or after `since`
        (one range query over the queue's buckets, filtered server-side: ISO times compare as
        text)."""
        rows = first_rows(self._table, *in_queue("RowKey gt @workers and lastDateActive ge @since", task_queue_id,
                                                 {"workers": WORKERS, "since": since}), limit)
        return [_record(task_queue_id, entity) for entity in rows]

    def page(self, task_queue_id: str, after: str, limit: int) -> list[WorkerRecord]:
        """Up to `limit` workers in key order, after the row key `after`: the first `limit` of
        each bucket, merged."""
        rows = first_rows_by_key(self._table, worker_partitions(task_queue_id), "RowKey gt @after",
                                 {"after": WORKERS + after}, limit)
        return [_record(task_queue_id, entity) for entity in rows]


def _memory_key(task_queue_id: str, worker_group: str, worker_id: str) -> str:
    return f"{task_queue_id}/{worker_group}.{worker_id}"


def row_key(worker: WorkerRecord) -> str:
    return f"{worker.worker_group}.{worker.worker_id}"


def _partition(worker: WorkerRecord) -> str:
    return worker_partition(worker.task_queue_id, worker.worker_group, worker.worker_id)


def _entity(worker: WorkerRecord) -> dict:
    return {"PartitionKey": _partition(worker), "RowKey": WORKERS + row_key(worker),
            "workerGroup": worker.worker_group, "workerId": worker.worker_id,
            "firstClaim": worker.first_claim, "lastDateActive": worker.last_date_active,
            "expires": worker.expires, "quarantineUntil": worker.quarantine_until,
            "quarantineDetails": json.dumps(list(worker.quarantine_details)),
            "recentTasks": json.dumps(list(worker.recent_tasks))}


def _record(task_queue_id: str, entity) -> WorkerRecord:
    return WorkerRecord(task_queue_id, entity["workerGroup"], entity["workerId"], entity["firstClaim"],
                        entity["lastDateActive"], entity["expires"], entity["quarantineUntil"],
                        tuple(json.loads(entity["quarantineDetails"])), tuple(json.loads(entity["recentTasks"])),
                        entity.metadata.get("etag"))
