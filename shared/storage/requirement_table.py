"""The TaskRequirements table: the dependencies a task still waits for.

PartitionKey = the waiting taskId, RowKey = a required taskId that has not yet resolved
in a way that satisfies it. A satisfied requirement's row is deleted; the task is ready
when its partition is empty. Deletes in one partition never conflict, and the emptiness
check is one query of one row, so a fan-in of thousands costs no contention: whoever
deletes the last row sees the partition empty and schedules the task (scheduling twice
is a no-op). The waiting task's rows are in one of the table's shards (see `table_shards`).
"""

from __future__ import annotations


from .account import StorageAccount
from .batches import delete_partition, delete_row, upsert_in_tables
from .queries import first_rows
from .table_shards import TableShards


class RequirementTable:
    def __init__(self, account: StorageAccount) -> None:
        self._shards = TableShards(account, "TaskRequirements")

    def add(self, rows: list[tuple[str, str, str]]) -> None:
        """Requirements as (waiting taskId, required taskId, expiry), batched per waiting task."""
        upsert_in_tables([(table, [{"PartitionKey": task_id, "RowKey": required_id, "expires": expires}
                                   for task_id, required_id, expires in part])
                          for table, part in self._shards.split(rows, lambda row: row[0])])

    def satisfy(self, task_id: str, required_id: str) -> None:
        delete_row(self._shards.of(task_id), task_id, required_id)  # a resolution may be handled twice

    def remaining(self, task_id: str, limit: int = 1) -> list[str]:
        return [row["RowKey"] for row in first_rows(self._shards.of(task_id), "PartitionKey eq @pk", {"pk": task_id},
                                                    limit, ["RowKey"])]

    def forget(self, task_id: str) -> None:
        """Delete what an expired task still waited for."""
        delete_partition(self._shards.of(task_id), task_id)
