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

    def add(self, task_queue_id: str, task_id: str, run_id: int, taken_until: str) -> None:
        self._table.upsert_entity({
            "PartitionKey": escape_key(task_queue_id), "RowKey": f"{task_id}.{run_id}",
            "takenUntil": taken_until,
        })

    def remove(self, task_queue_id: str, task_id: str, run_id: int) -> None:
        delete_row(self._table, escape_key(task_queue_id), f"{task_id}.{run_id}")

    def count(self, task_queue_id: str) -> int:
        rows = self._table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": escape_key(task_queue_id)}, select=["RowKey"])
        return sum(1 for _ in rows)
