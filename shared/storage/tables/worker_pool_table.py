"""The WorkerPools table: every pool's definition, in one partition in the order of their ids.

PartitionKey = `pools`, RowKey = escaped workerPoolId (its '/' escaped as `%2F`, which sorts
before any other character of an id: pools are in the order of their provisionerId, then of
their workerType), so listWorkerPools is one range of one partition. A pool's row is written by
createWorkerPool (an insert), by updateWorkerPool and deleteWorkerPool (merges conditional
on its ETag), each with its event in the row's outbox, and deleted once a deleted pool has
no workers left. The config is kept as written, in as many columns as it needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from types import MappingProxyType


from shared.domain.task_events import Event
from shared.domain.worker_pools import WorkerPool
from shared.storage.client.account import StorageAccount
from shared.storage.outbox import outbox
from shared.storage.outbox.outbox_rows import OutboxRows, row_name
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_if_unchanged
from shared.storage.patterns.keys import escape_key, unescape_key
from shared.storage.patterns.queries import first_rows, row_or_none

TABLE = "WorkerPools"
PARTITION = "pools"


@dataclass(frozen=True)
class WorkerPoolRecord:
    pool: WorkerPool
    etag: str | None = None
    outbox: tuple[Event, ...] = ()

    @property
    def key(self) -> str:
        return row_name(PARTITION, escape_key(self.pool.worker_pool_id))


class WorkerPoolTable(OutboxRows):
    def __init__(self, account: StorageAccount, marks: PublicationMarks) -> None:
        super().__init__(account.table(TABLE), marks)

    def load(self, worker_pool_id: str) -> WorkerPoolRecord | None:
        row = row_or_none(self._table, PARTITION, escape_key(worker_pool_id))
        return _record(row) if row is not None else None

    def insert(self, record: WorkerPoolRecord) -> WorkerPoolRecord:
        """AlreadyExists if the pool has a row."""
        return self._written(record, None)

    def save(self, record: WorkerPoolRecord) -> WorkerPoolRecord:
        """Write over the row as read; ChangedSinceRead if it changed (or went) since."""
        return self._written(record, record.etag)

    def _written(self, record: WorkerPoolRecord, etag: str | None) -> WorkerPoolRecord:
        new_etag, events = self.write(_entity(record.pool), etag, record.outbox)
        return replace(record, etag=new_etag, outbox=events)

    def delete(self, record: WorkerPoolRecord) -> None:
        """Delete the row if it is still as read; ChangedSinceRead if not."""
        delete_if_unchanged(self._table, PARTITION, escape_key(record.pool.worker_pool_id), record.etag,
                            record.pool.worker_pool_id)

    def page(self, after: str, limit: int) -> list[WorkerPoolRecord]:
        """Up to `limit` pools in id order, after the pool id `after` (empty: from the first)."""
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after",
                          {"pk": PARTITION, "after": escape_key(after)}, limit)
        return [_record(entity) for entity in rows]

    def ids(self) -> dict[str, str]:
        """Every pool's providerId by pool id (a small read: two columns of one partition)."""
        rows = self._table.query_entities("PartitionKey eq @pk", parameters={"pk": PARTITION},
                                          select=["RowKey", "providerId"])
        return {unescape_key(row["RowKey"]): row["providerId"] for row in rows}


def _entity(pool: WorkerPool) -> dict:
    return {"PartitionKey": PARTITION, "RowKey": escape_key(pool.worker_pool_id), "providerId": pool.provider_id,
            "description": pool.description, "owner": pool.owner, "emailOnError": pool.email_on_error,
            "created": pool.created, "lastModified": pool.last_modified,
            "previousProviderIds": json.dumps(list(pool.previous_provider_ids)),
            **long_text.to_columns("config", json.dumps(pool.to_json()["config"], separators=(",", ":")))}


def _record(entity) -> WorkerPoolRecord:
    pool = WorkerPool(worker_pool_id=unescape_key(entity["RowKey"]), provider_id=entity["providerId"],
                      description=entity["description"], owner=entity["owner"],
                      email_on_error=bool(entity["emailOnError"]),
                      config=MappingProxyType(json.loads(long_text.from_columns("config", entity))), created=entity["created"],
                      last_modified=entity["lastModified"],
                      previous_provider_ids=tuple(json.loads(entity.get("previousProviderIds") or "[]")))
    return WorkerPoolRecord(pool, entity.metadata.get("etag"), outbox.from_entity(entity))
