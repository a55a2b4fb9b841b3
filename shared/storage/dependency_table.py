"""The TaskDependencies table: who waits on a task, read when that task resolves.

PartitionKey = the required taskId, RowKey = the dependent taskId, with the dependent's
`requires` relation. One partition per required task, so a resolution reads its
dependents page by page, and a fan-out's rows are written in 100-row transactions. A
fan-out longer than a page also keeps its progress there (`~progress.<runId>`), so it
goes when the task's rows do.
"""

from __future__ import annotations

from dataclasses import dataclass

from azure.core.exceptions import ResourceNotFoundError

from .account import StorageAccount
from .batches import delete_partition, delete_row, upsert_in_batches
from .queries import first_rows


@dataclass(frozen=True)
class Dependent:
    task_id: str
    requires: str


# Progress rows share the partition, after every dependent: '~' sorts after the characters of
# a taskId ([A-Za-z0-9_-]).
PROGRESS = "~progress."
ALL_DONE = "~"


class DependencyTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("TaskDependencies")

    def add(self, edges: list[tuple[str, Dependent, str]]) -> None:
        """Edges as (required taskId, dependent, the dependent's expiry), batched per required task."""
        upsert_in_batches(self._table, [
            {"PartitionKey": required_id, "RowKey": dependent.task_id, "requires": dependent.requires,
             "expires": expires} for required_id, dependent, expires in edges])

    def dependents(self, required_id: str, after: str, limit: int) -> list[Dependent]:
        """Up to `limit` dependents in key order, starting after taskId `after`."""
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after and RowKey lt @end",
                          {"pk": required_id, "after": after, "end": PROGRESS}, limit, ["RowKey", "requires"])
        return [Dependent(row["RowKey"], row["requires"]) for row in rows]

    def progress(self, required_id: str, run_id: int) -> str:
        """The last dependent processed for the resolution by run `run_id` ("" for none yet,
        ALL_DONE once every one was)."""
        try:
            return self._table.get_entity(required_id, f"{PROGRESS}{run_id}", select=["after"])["after"]
        except ResourceNotFoundError:
            return ""

    def checkpoint(self, required_id: str, run_id: int, after: str, expires: str) -> None:
        """Remember how far the dependents of a resolution were processed, so a handler that
        dies in a long fan-out is resumed there rather than from the start."""
        self._table.upsert_entity({"PartitionKey": required_id, "RowKey": f"{PROGRESS}{run_id}", "after": after,
                                   "expires": expires})

    def forget(self, task_id: str, dependencies: list[str]) -> None:
        """Delete an expired task's edges: to its dependents (its own partition) and from
        each of its dependencies (one row in each of theirs)."""
        delete_partition(self._table, task_id)
        for required_id in dependencies:
            delete_row(self._table, required_id, task_id)
