"""The TaskDependencies table: who waits on a task, read when that task resolves.

PartitionKey = the required taskId, RowKey = the dependent taskId, with the dependent's
`requires` relation. One partition per required task, so a resolution reads its
dependents page by page, and a fan-out's rows are written in 100-row transactions.
"""

from __future__ import annotations

from dataclasses import dataclass

from .account import StorageAccount
from .batches import upsert_in_batches


@dataclass(frozen=True)
class Dependent:
    task_id: str
    requires: str


class DependencyTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("TaskDependencies")

    def add(self, required_id: str, dependents: list[Dependent], expires: str) -> None:
        rows = [{"PartitionKey": required_id, "RowKey": dependent.task_id,
                 "requires": dependent.requires, "expires": expires} for dependent in dependents]
        upsert_in_batches(self._table, rows)

    def dependents(self, required_id: str, after: str, limit: int) -> list[Dependent]:
        """Up to `limit` dependents in key order, starting after taskId `after`."""
        pages = self._table.query_entities(
            "PartitionKey eq @pk and RowKey gt @after", parameters={"pk": required_id, "after": after},
            results_per_page=limit, select=["RowKey", "requires"]).by_page()
        return [Dependent(row["RowKey"], row["requires"]) for row in next(pages, [])][:limit]
