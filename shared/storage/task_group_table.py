"""The TaskGroups table: each group's row and its member rows, in one partition.

PartitionKey = taskGroupId; RowKey "group" holds schedulerId, expires and sealed;
RowKey "member.<taskId>" marks each task of the group. Keeping both in one partition lets
later changes to a group and its members go in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import UpdateMode

from .account import StorageAccount
from .errors import AlreadyExists, ChangedSinceRead

GROUP_ROW = "group"
MEMBER_PREFIX = "member."
_MEMBER_END = "member/"  # '/' sorts right after '.', closing the member key range


@dataclass(frozen=True)
class TaskGroupRecord:
    task_group_id: str
    scheduler_id: str
    expires: str
    sealed: str = ""
    etag: str | None = None


class TaskGroupTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("TaskGroups")

    def insert(self, group: TaskGroupRecord) -> TaskGroupRecord:
        try:
            meta = self._table.create_entity(self._entity(group))
        except ResourceExistsError as exc:
            raise AlreadyExists(group.task_group_id) from exc
        return replace(group, etag=meta.get("etag"))

    def load(self, task_group_id: str) -> TaskGroupRecord | None:
        try:
            entity = self._table.get_entity(task_group_id, GROUP_ROW)
        except ResourceNotFoundError:
            return None
        return TaskGroupRecord(task_group_id, entity["schedulerId"], entity["expires"],
                               entity.get("sealed", ""), entity.metadata.get("etag"))

    def save(self, group: TaskGroupRecord) -> TaskGroupRecord:
        try:
            meta = self._table.update_entity(
                self._entity(group), mode=UpdateMode.MERGE, etag=group.etag,
                match_condition=MatchConditions.IfNotModified)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            raise ChangedSinceRead(group.task_group_id) from exc
        return replace(group, etag=meta.get("etag"))

    def add_member(self, task_group_id: str, task_id: str) -> None:
        self._table.upsert_entity({"PartitionKey": task_group_id, "RowKey": MEMBER_PREFIX + task_id})

    def members(self, task_group_id: str, after: str, limit: int) -> list[str]:
        """Up to `limit` member task ids in key order, starting after task id `after`."""
        start = MEMBER_PREFIX + after if after else MEMBER_PREFIX
        pages = self._table.query_entities(
            "PartitionKey eq @pk and RowKey gt @start and RowKey lt @end",
            parameters={"pk": task_group_id, "start": start, "end": _MEMBER_END},
            results_per_page=limit, select=["RowKey"],
        ).by_page()
        return [entity["RowKey"][len(MEMBER_PREFIX):] for entity in next(pages, [])][:limit]

    @staticmethod
    def _entity(group: TaskGroupRecord) -> dict:
        return {"PartitionKey": group.task_group_id, "RowKey": GROUP_ROW,
                "schedulerId": group.scheduler_id, "expires": group.expires, "sealed": group.sealed}
