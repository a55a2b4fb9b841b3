"""The HandledResolutions table: which task resolutions have had their dependents processed.

PartitionKey = taskId, RowKey = runId. A marker row per resolution (not a column on the
task row) keeps the check exact when a task is rerun between a crash and its repair, and
never moves the task row's ETag under a worker's feet.
"""

from __future__ import annotations

from azure.core.exceptions import ResourceNotFoundError

from .account import StorageAccount
from .batches import delete_partition


class HandledTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("HandledResolutions")

    def mark(self, task_id: str, run_id: int, expires: str) -> None:
        self._table.upsert_entity({"PartitionKey": task_id, "RowKey": str(run_id), "expires": expires})

    def is_marked(self, task_id: str, run_id: int) -> bool:
        try:
            self._table.get_entity(task_id, str(run_id), select=["RowKey"])
            return True
        except ResourceNotFoundError:
            return False

    def forget(self, task_id: str) -> None:
        delete_partition(self._table, task_id)
