"""The TaskRequirements table: the dependencies a task still waits for.

PartitionKey = the waiting taskId's bucket for the required task (see `buckets`: a fan-in
waits on up to 10,000 tasks), RowKey = a required taskId that has not yet resolved in a way
that satisfies it. A satisfied requirement's row is deleted; the task is ready when its
buckets are empty. Deletes never conflict, and the emptiness check is one query of one
row, so a fan-in of thousands costs no contention: whoever deletes the last row sees none
left and schedules the task (scheduling twice is a no-op). The waiting task's rows are in
one of the table's shards (see `table_shards`).
"""

from __future__ import annotations

from .account import StorageAccount
from .batches import delete_row
from .buckets import bucket, first_keys, forget_buckets
from .table_shards import TableShards


class RequirementTable:
    def __init__(self, account: StorageAccount) -> None:
        self._shards = TableShards(account, "TaskRequirements")

    def add(self, rows: list[tuple[str, str, str]]) -> None:
        """Requirements as (waiting taskId, required taskId, expiry), batched per bucket."""
        self._shards.upsert([(task_id, {"PartitionKey": bucket(task_id, required_id), "RowKey": required_id,
                                        "expires": expires}) for task_id, required_id, expires in rows])

    def satisfy(self, task_id: str, required_id: str) -> None:
        # a resolution may be handled twice: a row gone already is no error
        delete_row(self._shards.of(task_id), bucket(task_id, required_id), required_id)

    def remaining(self, task_id: str, limit: int = 1) -> list[str]:
        return first_keys(self._shards.of(task_id), task_id, "", "", limit)

    def forget(self, task_id: str) -> None:
        """Delete what an expired task still waited for."""
        forget_buckets(self._shards.of(task_id), task_id)
