"""The PendingTasks table: where claimWork finds the next pending run of a task queue.

RowKey = `<priority rank>.<scheduled>.<taskId>.<runId>`, in a bucket partition of the
queue, `<task queue id>~<priority rank>.<the second it was scheduled in>`: the buckets of a
queue sort together and in the order of their rows, so one range query in key order
yields highest priority first and, within a priority, oldest first, without touching other
queues. One partition for the whole queue grew with its backlog (a fan-out of 9,500 made it
9,500 rows), and Azurite scans a partition to find a row, twice for each upsert.

Runs made pending together share their scheduled time: a graph's extension whose 10,000
tasks are ready at creation made one partition of 10,000 hints, which every upsert and every
claim's delete walked. So hints written in one call beyond BULK of the same second go in
`<bucket>.<first character of the taskId>`, sorting right after the second's own bucket;
a claim of a few tasks created one by one still deletes its hints in one transaction. A
claim knows a hint's partition from the read; a run that stops being pending otherwise
deletes its hint from the second's own bucket, and a spread hint left behind is removed by
the next claim that reads it (as any hint of a run no longer pending).

A hint is written *before* the task row makes the run pending, so a pending run always has
a hint; a hint may therefore outlive its run or precede it. Readers check the task row.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone


from shared.storage.client.account import StorageAccount
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.batches import MAX_BATCH, delete_if_unchanged, delete_row, upsert_in_batches
from shared.storage.patterns.buckets import IN_BUCKETS, SEPARATOR, bucket_range
from shared.storage.patterns.deferred_deletes import DeferredDeletes
from shared.storage.patterns.keys import escape_key
from shared.storage.patterns.queries import first_rows, row_or_none


@dataclass(frozen=True)
class PendingHint:
    task_queue_id: str
    task_id: str
    run_id: int
    row_key: str
    written: datetime
    partition: str

    @property
    def priority_rank(self) -> int:
        """The priority the hint was written for (the task's may have changed since)."""
        return int(self.row_key.split(".", 1)[0])


SECOND = len("2026-11-24T13:41:05")
BULK = MAX_BATCH   # hints of one second written at once beyond which they are spread


def _row_key(priority_rank: int, scheduled: str, task_id: str, run_id: int) -> str:
    return f"{priority_rank}.{scheduled}.{task_id}.{run_id}"


def _bucket(task_queue_id: str, row_key: str) -> str:
    """The hint's partition: its queue's, for its priority and scheduled second."""
    rank, scheduled = row_key.split(".", 1)
    return f"{escape_key(task_queue_id)}{SEPARATOR}{rank}.{scheduled[:SECOND]}"


class PendingTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("PendingTasks")
        self._later = DeferredDeletes(self._table, "pending hints")

    def add(self, task_queue_id: str, priority_rank: int, scheduled: str, task_id: str, run_id: int) -> None:
        self.add_many([(task_queue_id, priority_rank, scheduled, task_id, run_id)])

    def add_many(self, hints: list[tuple[str, int, str, str, int]]) -> list[PendingHint]:
        """Hints as (taskQueueId, priority rank, scheduled, taskId, runId), batched per bucket;
        the hints written."""
        rows = []
        for task_queue_id, priority_rank, scheduled, task_id, run_id in hints:
            row_key = _row_key(priority_rank, scheduled, task_id, run_id)
            rows.append({"PartitionKey": _bucket(task_queue_id, row_key), "RowKey": row_key,
                         "taskId": task_id, "runId": run_id})
        per_bucket = Counter(row["PartitionKey"] for row in rows)
        for row in rows:
            if per_bucket[row["PartitionKey"]] > BULK:
                row["PartitionKey"] += "." + row["taskId"][:1]
        upsert_in_batches(self._table, rows)
        written = datetime.now(timezone.utc)
        return [PendingHint(hint[0], row["taskId"], row["runId"], row["RowKey"], written, row["PartitionKey"])
                for hint, row in zip(hints, rows)]

    def remove_run(self, task_queue_id: str, priority_rank: int, scheduled: str, task_id: str, run_id: int,
                   soon: bool = False) -> None:
        """Delete a run's hint; `soon`: with `remove_soon`'s, for a run that left pending for
        good (claimed or resolved: its key is never a pending run's again)."""
        row_key = _row_key(priority_rank, scheduled, task_id, run_id)
        if soon:
            self._later.add([(_bucket(task_queue_id, row_key), row_key)])
        else:
            delete_row(self._table, _bucket(task_queue_id, row_key), row_key)   # gone already, or spread (see above)

    def version(self, task_queue_id: str, priority_rank: int, scheduled: str, task_id: str, run_id: int) -> str | None:
        """The ETag of a run's hint in its second's bucket (None: not there), so that it is
        removed later only if nobody wrote it again meanwhile (`remove_version`)."""
        row_key = _row_key(priority_rank, scheduled, task_id, run_id)
        row = row_or_none(self._table, _bucket(task_queue_id, row_key), row_key, select=["RowKey"])
        return row.metadata["etag"] if row is not None else None

    def remove_version(self, task_queue_id: str, priority_rank: int, scheduled: str, task_id: str, run_id: int,
                       etag: str) -> None:
        """Delete a run's hint if it is still the version `version` read (a hint written again
        since is another writer's, for a run pending at that priority again)."""
        row_key = _row_key(priority_rank, scheduled, task_id, run_id)
        try:
            delete_if_unchanged(self._table, _bucket(task_queue_id, row_key), row_key, etag, task_id)
        except ChangedSinceRead:
            pass

    def peek(self, task_queue_id: str, limit: int) -> list[PendingHint]:
        """The first `limit` hints of the queue in claim order, but those `remove_soon` holds."""
        gone = self._later.holds()
        page = first_rows(self._table, IN_BUCKETS, bucket_range(escape_key(task_queue_id)), limit + len(gone),
                          ["PartitionKey", "RowKey", "taskId", "runId"])
        return [self._hint(task_queue_id, entity) for entity in page
                if (entity["PartitionKey"], entity["RowKey"]) not in gone][:limit]

    def page(self, task_queue_id: str, after: tuple[str, str] | None, limit: int) -> list[PendingHint]:
        """Up to `limit` hints of the queue in claim order, after the hint whose (partition,
        row key) is `after`: the rest of its bucket, then the buckets after it (a listing's
        pages; it reads what `remove_soon` holds as still there)."""
        columns = ["PartitionKey", "RowKey", "taskId", "runId"]
        every = bucket_range(escape_key(task_queue_id))
        rows = []
        if after:
            rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @rk", {"pk": after[0], "rk": after[1]},
                              limit, columns)
            every = {**every, "low": after[0]}
        if len(rows) < limit:
            rows += first_rows(self._table, IN_BUCKETS, every, limit - len(rows), columns)
        return [self._hint(task_queue_id, entity) for entity in rows]

    def remove(self, hint: PendingHint) -> None:
        delete_row(self._table, hint.partition, hint.row_key)   # another claimer cleaned it up first

    def remove_soon(self, hints: list[PendingHint]) -> None:
        """Delete hints within a moment (see `deferred_deletes`), a transaction per partition
        for those of many claimWork calls; this process reads them as gone meanwhile, and
        another that reads one finds its run claimed, as for any hint left behind."""
        self._later.add([(hint.partition, hint.row_key) for hint in hints])

    def flush_removals(self) -> int:
        """Delete at once the hints `remove_soon` was given; how many."""
        return self._later.flush()

    def count(self, task_queue_id: str) -> int:
        self.flush_removals()   # what waits for its delete is not pending
        rows = self._table.query_entities(IN_BUCKETS, parameters=bucket_range(escape_key(task_queue_id)),
                                          select=["RowKey"])
        return sum(1 for _ in rows)

    @staticmethod
    def _hint(task_queue_id: str, entity) -> PendingHint:
        written = entity.metadata.get("timestamp") or datetime.now(timezone.utc)
        return PendingHint(task_queue_id, entity["taskId"], entity["runId"], entity["RowKey"], written,
                           entity["PartitionKey"])
