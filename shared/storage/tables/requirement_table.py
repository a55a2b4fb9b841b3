"""The TaskRequirements table: the dependencies a task still waits for.

PartitionKey = the waiting taskId's bucket for the required task (see `buckets`: a fan-in
waits on up to 10,000 tasks), RowKey = a required taskId that has not yet resolved in a way
that satisfies it (a task that waits on one task has none: see `dependency_tracker`), counted per bucket (see `countdown`: "~waits" counts them, "~once.<taskId>"
marks each requirement ever written). A satisfied requirement's row is deleted with its
count, and never comes back (its marker stays); the task is ready when every count is zero,
which whoever deletes the last row learns from its own write and schedules the task
(scheduling twice is a no-op). A fan-in of thousands costs no contention beyond a count
per bucket. The waiting task's rows are in one of the table's shards (see `table_shards`).
"""

from __future__ import annotations

from itertools import groupby

from shared.runtime.thread_pools import REQUIREMENT_WRITES
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.buckets import first_keys, forget_buckets
from shared.storage.patterns.countdown import Countdown
from shared.storage.patterns.table_shards import TableShards



class RequirementTable:
    def __init__(self, account: StorageAccount) -> None:
        self._shards = TableShards(account, "TaskRequirements")

    def add(self, rows: list[tuple[str, str]]) -> None:
        """Requirements as (waiting taskId, required taskId), each task's at once; one
        written before (satisfied or not) is not written again."""
        owners = [(task_id, [required for _, required in same])
                  for task_id, same in groupby(sorted(rows), key=lambda row: row[0])]
        list(REQUIREMENT_WRITES.map(lambda owner: self._waits(owner[0]).add(*owner), owners))

    def satisfy(self, task_id: str, required_id: str) -> bool:
        """The requirement is met (again, or never written: no change); whether the task
        still waits for any."""
        return self._waits(task_id).remove(task_id, required_id)

    def remaining(self, task_id: str, limit: int = 1, after: str = "") -> list[str]:
        """Up to `limit` of the tasks `task_id` still waits for, in taskId order after `after`."""
        return first_keys(self._shards.of(task_id), task_id, "", after, limit)

    def forget(self, task_id: str) -> None:
        """Delete what an expired task still waited for, and the marks of what it did."""
        forget_buckets(self._shards.of(task_id), task_id)

    def _waits(self, task_id: str) -> Countdown:
        return Countdown(self._shards.of(task_id), "", "waits", marker="~once.")
