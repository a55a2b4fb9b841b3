"""The TaskQueues table: the task queues the Queue has seen, for listTaskQueues/getTaskQueue.

One partition ("queues"), RowKey = escaped taskQueueId: the list is small and is read in
key order for paging. A provisioner's queues are a range of it: '%', which begins the escaped
'/', sorts before every character of an id, so `<provisionerId>%2F...` rows follow one another
and precede those of any provisioner whose id extends this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from azure.data.tables import UpdateMode

from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_if_unchanged
from shared.storage.patterns.keys import escape_key, unescape_key
from shared.storage.patterns.queries import first_rows, row_or_none

PARTITION = "queues"


@dataclass(frozen=True)
class TaskQueueRecord:
    task_queue_id: str
    last_date_active: str
    expires: str
    # declareWorkerType's (deprecated) details; None in a write leaves the stored ones.
    description: str | None = None
    stability: str | None = None
    etag: str | None = field(default=None, compare=False)


class TaskQueueTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("TaskQueues")

    def put(self, record: TaskQueueRecord) -> None:
        """Merged into the row: a queue seen again keeps the details it was declared with."""
        details = {name: value for name, value in (("description", record.description),
                                                   ("stability", record.stability)) if value is not None}
        self._table.upsert_entity({
            "PartitionKey": PARTITION, "RowKey": escape_key(record.task_queue_id),
            "lastDateActive": record.last_date_active, "expires": record.expires, **details,
        }, mode=UpdateMode.MERGE)

    def get(self, task_queue_id: str) -> TaskQueueRecord | None:
        entity = row_or_none(self._table, PARTITION, escape_key(task_queue_id))
        return self._record(entity) if entity is not None else None

    def delete(self, record: TaskQueueRecord) -> None:
        """Delete the row if it is still as read; else ChangedSinceRead (gone already is fine)."""
        delete_if_unchanged(self._table, PARTITION, escape_key(record.task_queue_id), record.etag,
                            record.task_queue_id)

    def page(self, after: str, limit: int) -> list[TaskQueueRecord]:
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after",
                          {"pk": PARTITION, "after": escape_key(after) if after else ""}, limit)
        return [self._record(entity) for entity in rows]

    def page_of_provisioner(self, provisioner_id: str, after: str, limit: int) -> list[TaskQueueRecord]:
        """Up to `limit` of the provisioner's queues whose workerType sorts after `after`."""
        prefix = escape_key(f"{provisioner_id}/")
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after and RowKey lt @end",
                          {"pk": PARTITION, "after": prefix + escape_key(after), "end": prefix + "~"}, limit)
        return [self._record(entity) for entity in rows]

    @staticmethod
    def _record(entity) -> TaskQueueRecord:
        return TaskQueueRecord(unescape_key(entity["RowKey"]), entity["lastDateActive"], entity["expires"],
                               entity.get("description", ""), entity.get("stability", "experimental"),
                               entity.metadata.get("etag"))
