"""The HandledResolutions table: which task resolutions have had their dependents processed.

PartitionKey = taskId, RowKey = runId. A marker row per resolution (not a column on the
task row) keeps the check exact when a task is rerun between a crash and its repair, and
never moves the task row's ETag under a worker's feet. Until the work is done the row
holds a checkpoint: the last dependent processed.
"""

from __future__ import annotations

from azure.core.exceptions import ResourceNotFoundError

from .account import StorageAccount
from .batches import delete_partition


class HandledTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("HandledResolutions")

    def mark(self, task_id: str, run_id: int, expires: str) -> None:
        self._table.upsert_entity({"PartitionKey": task_id, "RowKey": str(run_id), "expires": expires,
                                   "done": True, "after": ""})

    def progress(self, task_id: str, run_id: int) -> tuple[bool, str]:
        """(done, the last dependent processed so far: "" to begin with)."""
        try:
            row = self._table.get_entity(task_id, str(run_id), select=["done", "after"])
        except ResourceNotFoundError:
            return False, ""
        return bool(row.get("done")), row.get("after") or ""

    def is_marked(self, task_id: str, run_id: int) -> bool:
        return self.progress(task_id, run_id)[0]

    def checkpoint(self, task_id: str, run_id: int, after: str, expires: str) -> None:
        """Remember that the dependents up to `after` were processed, so a handler that dies
        in a long fan-out is resumed there rather than from the start."""
        self._table.upsert_entity({"PartitionKey": task_id, "RowKey": str(run_id), "expires": expires,
                                   "done": False, "after": after})

    def forget(self, task_id: str) -> None:
        delete_partition(self._table, task_id)
