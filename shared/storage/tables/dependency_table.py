"""The TaskDependencies table: who waits on a task whose row does not list its dependents
(more than `LISTED_DEPENDENTS`, or one its row had no room left for), read when that task
resolves.

PartitionKey = the required taskId's bucket for the dependent (see `buckets`: a root of
95,000 dependents would otherwise be one partition that every write of its fan-out walks),
RowKey = the dependent taskId, with the dependent's `requires` relation and how many tasks
it waits on. A resolution reads its dependents page by page in taskId order, over the
buckets; a fan-out's rows are written in 100-row transactions per bucket. The required
task's rows are in one of the table's shards (see `table_shards`).
"""

from __future__ import annotations

from azure.core.exceptions import ResourceExistsError

from shared.domain.dependencies import Dependent
from shared.runtime.thread_pools import BATCH_WRITES
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_row
from shared.storage.patterns.buckets import bucket, first_bucket_rows
from shared.storage.patterns.table_shards import TableShards


class DependencyTable:
    def __init__(self, account: StorageAccount) -> None:
        self._shards = TableShards(account, "TaskDependencies")

    def add(self, edges: list[tuple[str, Dependent, str]]) -> None:
        """Edges as (required taskId, dependent, the dependent's expiry), batched per required task."""
        self._shards.upsert([(required_id, _row(required_id, dependent, expires))
                             for required_id, dependent, expires in edges])

    def add_absent(self, edges: list[tuple[str, Dependent, str]]) -> list[tuple[str, Dependent, str]]:
        """`add` each edge that has no row yet (one row at a time: a transaction would fail
        whole for one that has); those this call wrote. For dependents created without
        reading whether they exist: one that does, with another definition, keeps its edges."""
        def added(edge: tuple[str, Dependent, str]) -> bool:
            try:
                lost_responses.insert(self._shards.of(edge[0]), _row(*edge))
            except ResourceExistsError:
                return False
            return True
        return [edge for edge, fresh in zip(edges, BATCH_WRITES.map(added, edges)) if fresh]

    def dependents(self, required_id: str, after: str, limit: int) -> list[Dependent]:
        """Up to `limit` dependents in key order, starting after taskId `after`."""
        rows = first_bucket_rows(self._shards.of(required_id), required_id, "", after, limit,
                                 ["RowKey", "requires", "waitsOn"])
        return [Dependent(row["RowKey"], row["requires"], row.get("waitsOn") or 0) for row in rows]

    def forget(self, task_id: str, dependencies: list[str]) -> None:
        """Delete a task's edges from each of `dependencies` (one row in each of their
        partitions): an expired task's, or those a refused createTask wrote. Its own
        partition, its edges to its dependents, is emptied the same way by each dependent as
        it expires (none expires before its dependencies' deadline, and none is left
        waiting: an expired task was resolved)."""
        for required_id in dependencies:
            delete_row(self._shards.of(required_id), bucket(required_id, task_id), task_id)


def _row(required_id: str, dependent: Dependent, expires: str) -> dict:
    return {"PartitionKey": bucket(required_id, dependent.task_id), "RowKey": dependent.task_id,
            "requires": dependent.requires, "waitsOn": dependent.waits_on, "expires": expires}
