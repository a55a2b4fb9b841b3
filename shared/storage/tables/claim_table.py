"""Claimed runs: the runs workers hold, each claim's watch, and the resolutions of claimed
runs still to be processed. They are rows of the Workers table, beside the rows of the
workers that hold them (see `worker_table`), so that a claimWork writes its claims' rows and
its worker's row in one transaction.

PartitionKey = the worker's bucket of its task queue, `<escaped task queue id>~<c>`
(`worker_partition`), RowKey = `<taskId>.<runId>.<workerGroup>.<workerId>`, with `takenUntil`
(a worker's row sorts after them all: '~' follows every taskId character). One partition per
queue put every claimWork, claim row and resolution intent of a busy queue in one partition,
which Azure serves at about 2,000 entities/s: `bench.lifecycle --heat` measured it as the
hottest partition of all, 2.3 entities a task, a ceiling near 850 tasks/s a queue. So a
queue's workers are spread over WORKER_BUCKETS partitions by a hash of the worker's name,
and a worker's row and the claims it holds still share one (one transaction per claimWork).
A read of the whole queue (`count`, `live`) is one range query over its buckets; a listing
in key order (`page`) reads each bucket's first rows at once and merges them. Rows of the
layout before buckets (one partition per queue) are not read: none was ever released. A
row is written *before* the claim it watches (one transaction for all the runs of a
claimWork) and keeps a `takenUntil` no later than the run's, so no claim can outlive a crash
unwatched. It is removed when its run leaves `running` without resolving the task (a
retry), and otherwise by the resolution handler once the resolution is processed: until
then it is the resolution's intent (see `resolution_messages`). Rows whose `takenUntil` passed
are what the claim expiry sweep reads; they are few, as the table only holds live claims
and workers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.storage.client.account import StorageAccount
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.batches import delete_in_batches, upsert_in_batches
from shared.storage.patterns.buckets import IN_BUCKETS, bucket, bucket_owner, bucket_range, first_rows_by_key
from shared.storage.patterns.deferred_deletes import DeferredDeletes
from shared.storage.patterns.keys import escape_key, unescape_key
from shared.storage.patterns.queries import first_rows

TABLE = "Workers"   # shared with the workers' rows (see `worker_table`)
WORKERS = "~"       # where the workers' rows begin: after every claim row
WORKER_BUCKETS = "0123456789abcdef"   # a task queue's partitions, one per character


def worker_partition(task_queue_id: str, worker_group: str, worker_id: str) -> str:
    """The partition of a worker's row and of the claims it holds: its bucket of the queue."""
    chosen = WORKER_BUCKETS[zlib.crc32(f"{worker_group}.{worker_id}".encode()) % len(WORKER_BUCKETS)]
    return bucket(escape_key(task_queue_id), chosen)


def worker_partitions(task_queue_id: str) -> list[str]:
    """Every partition of the queue's workers, in key order."""
    return [bucket(escape_key(task_queue_id), chosen) for chosen in WORKER_BUCKETS]


def in_queue(condition: str, task_queue_id: str, parameters: dict) -> tuple[str, dict]:
    """The query (and its parameters) of the rows meeting `condition` in every bucket of the
    queue: one range query (a queue whose id extends this one's sorts outside the range, as
    '~' follows every character of an escaped id)."""
    return f"{IN_BUCKETS} and {condition}", {**bucket_range(escape_key(task_queue_id)), **parameters}


@dataclass(frozen=True)
class ClaimRow:
    task_queue_id: str
    task_id: str
    run_id: int
    worker_group: str
    worker_id: str
    taken_until: str = ""

    @property
    def row_key(self) -> str:
        return f"{self.task_id}.{self.run_id}.{self.worker_group}.{self.worker_id}"

    @property
    def partition(self) -> str:
        return worker_partition(self.task_queue_id, self.worker_group, self.worker_id)


class ClaimTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)
        self._later = DeferredDeletes(self._table, "claim rows")

    def add(self, rows: list[ClaimRow], beside: tuple | None = None) -> dict | None:
        """Write (or move the `takenUntil` of) claim rows, one transaction per partition (a
        worker's rows share one). `beside`: one more operation of the same partition (their
        worker's row's conditional write, see `WorkerTable.update_operation`) in the same
        transaction, which all fails if it does (ChangedSinceRead); its answer ({"etag": ...})
        is returned."""
        entities = [{"PartitionKey": row.partition, "RowKey": row.row_key,
                     "takenUntil": row.taken_until, "workerGroup": row.worker_group, "workerId": row.worker_id}
                    for row in rows]
        if beside is None:
            upsert_in_batches(self._table, entities)
            return None
        try:
            return self._table.submit_transaction([beside, *(("upsert", entity) for entity in entities)])[0]
        except TableTransactionError as refused:
            raise ChangedSinceRead(rows[0].task_queue_id if rows else "") from refused

    def move(self, row: ClaimRow, taken_until: str) -> None:
        """Set a row's `takenUntil`, unless the row is gone (never bringing one back)."""
        try:
            self._table.update_entity({"PartitionKey": row.partition, "RowKey": row.row_key,
                                       "takenUntil": taken_until}, mode=UpdateMode.MERGE)
        except ResourceNotFoundError:
            pass

    def remove(self, rows: list[ClaimRow]) -> None:
        """Delete claim rows (rows already gone are no error)."""
        delete_in_batches(self._table, [(row.partition, row.row_key) for row in rows])

    def remove_soon(self, rows: list[ClaimRow]) -> None:
        """Delete the rows of resolutions followed up, within a second, with others of their
        partition: a row left by a crash before then is only a resolution announced once more
        (see `deferred_deletes`)."""
        self._later.add([(row.partition, row.row_key) for row in rows])

    def flush_removals(self) -> int:
        """Delete at once the rows `remove_soon` was given; how many."""
        return self._later.flush()

    def due(self, now: str, limit: int) -> list[ClaimRow]:
        """Up to `limit` rows whose `takenUntil` is at or before `now`, in every queue."""
        return [_row(entity) for entity in first_rows(
            self._table, "takenUntil le @now and RowKey lt @workers", {"now": now, "workers": WORKERS}, limit,
            ["PartitionKey", "RowKey", "takenUntil"])]

    def live(self, task_queue_id: str, now: str, limit: int) -> list[ClaimRow]:
        """Up to `limit` of the queue's claims whose `takenUntil` is after `now`: runs whose
        workers reclaim them (one range query over the queue's buckets, filtered server-side)."""
        return [_row(entity) for entity in first_rows(
            self._table, *in_queue("RowKey lt @workers and takenUntil gt @now", task_queue_id,
                                   {"workers": WORKERS, "now": now}), limit,
            ["PartitionKey", "RowKey", "takenUntil"])]

    def held_by(self, task_queue_id: str, worker_group: str, worker_id: str) -> list[tuple[str, int]]:
        """(taskId, runId) of the runs a worker holds (its partition, filtered server-side)."""
        rows = self._table.query_entities(
            "PartitionKey eq @pk and RowKey lt @workers and workerGroup eq @group and workerId eq @worker",
            parameters={"pk": worker_partition(task_queue_id, worker_group, worker_id), "workers": WORKERS,
                        "group": worker_group, "worker": worker_id},
            select=["PartitionKey", "RowKey"])
        return [(row.task_id, row.run_id) for row in map(_row, rows)]

    def page(self, task_queue_id: str, after: str, limit: int) -> list[ClaimRow]:
        """Up to `limit` claim rows of the queue in key order (taskId, then runId), after the
        row key `after` (a listing's pages): the first `limit` of each bucket, merged."""
        return [_row(entity) for entity in first_rows_by_key(
            self._table, worker_partitions(task_queue_id), "RowKey gt @after and RowKey lt @workers",
            {"after": after, "workers": WORKERS}, limit, ["PartitionKey", "RowKey", "takenUntil"])]

    def count(self, task_queue_id: str) -> int:
        """Claimed runs of the queue. The rows `remove_soon` holds are deleted first, so this
        process counts exactly; another's rows of handled resolutions may still be counted
        for up to a second (Taskcluster's claimedTasks is approximate, and may be higher)."""
        self.flush_removals()
        query, parameters = in_queue("RowKey lt @workers", task_queue_id, {"workers": WORKERS})
        rows = self._table.query_entities(query, parameters=parameters, select=["RowKey"])
        return len({key.rsplit(".", 2)[0] for key in (row["RowKey"] for row in rows)})


def _row(entity) -> ClaimRow:
    task_id, run_id, worker_group, worker_id = entity["RowKey"].split(".", 3)
    task_queue_id = unescape_key(bucket_owner(entity["PartitionKey"]))
    return ClaimRow(task_queue_id, task_id, int(run_id), worker_group, worker_id, entity.get("takenUntil", ""))
