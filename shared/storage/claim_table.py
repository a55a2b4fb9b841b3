"""The ClaimedRuns table: the runs of a task queue that workers hold right now.

PartitionKey = task queue id, RowKey = `<taskId>.<runId>`. Written after a claim and
removed after the run resolves; it feeds the claimed count of a queue and is a hint only.
"""

from __future__ import annotations


from .account import StorageAccount
from .batches import delete_row
from .keys import escape_key


class ClaimTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("ClaimedRuns")

    def add(self, task_queue_id: str, task_id: str, run_id: int, taken_until: str,
            worker_group: str, worker_id: str) -> None:
        self._table.upsert_entity({
            "PartitionKey": escape_key(task_queue_id), "RowKey": f"{task_id}.{run_id}",
            "takenUntil": taken_until, "workerGroup": worker_group, "workerId": worker_id,
        })

    def remove(self, task_queue_id: str, task_id: str, run_id: int) -> None:
        delete_row(self._table, escape_key(task_queue_id), f"{task_id}.{run_id}")

    def held_by(self, task_queue_id: str, worker_group: str, worker_id: str) -> list[tuple[str, int]]:
        """(taskId, runId) of the runs a worker holds (one partition, filtered server-side)."""
        rows = self._table.query_entities(
            "PartitionKey eq @pk and workerGroup eq @group and workerId eq @worker",
            parameters={"pk": escape_key(task_queue_id), "group": worker_group, "worker": worker_id},
            select=["RowKey"])
        return [(key.rsplit(".", 1)[0], int(key.rsplit(".", 1)[1])) for key in (row["RowKey"] for row in rows)]

    def count(self, task_queue_id: str) -> int:
        rows = self._table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": escape_key(task_queue_id)}, select=["RowKey"])
        return sum(1 for _ in rows)
