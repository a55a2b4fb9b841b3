"""The WorkerPoolErrors table: what went wrong while starting a pool's workers, and what its
workers reported (listWorkerPoolErrors), newest first.

PartitionKey = escaped workerPoolId, RowKey = `<milliseconds before year 9999, 13 digits>.<errorId>`:
a pool's errors are one partition whose key order is newest first, and those older than a
moment are the range after its key (what the provisioner drops when they expire). A row
is written once, with its worker-pool-error event in its outbox.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Mapping

from shared.domain.task_events import Event
from shared.domain.timestamps import parse_iso
from shared.storage.client.account import StorageAccount
from shared.storage.outbox import outbox
from shared.storage.outbox.outbox_rows import OutboxRows, row_name
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.batches import delete_rows
from shared.storage.patterns.keys import escape_key
from shared.storage.patterns.queries import first_rows

TABLE = "WorkerPoolErrors"
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=timezone.utc)
_DIGITS = 13


@dataclass(frozen=True)
class WorkerPoolErrorRecord:
    worker_pool_id: str
    error_id: str
    reported: str
    kind: str
    title: str
    description: str
    extra: Mapping[str, Any]
    outbox: tuple[Event, ...] = ()
    etag: str | None = None

    @property
    def row_key(self) -> str:
        return f"{_newest_first(self.reported)}.{self.error_id}"

    @property
    def key(self) -> str:
        return row_name(escape_key(self.worker_pool_id), self.row_key)

    def to_json(self) -> dict:
        """As worker-pool-error.json has it."""
        return {"workerPoolId": self.worker_pool_id, "errorId": self.error_id, "reported": self.reported,
                "kind": self.kind, "title": self.title, "description": self.description, "extra": dict(self.extra)}


def _newest_first(reported: str) -> str:
    millis = int((_END_OF_TIME - parse_iso(reported)).total_seconds() * 1000)
    return f"{millis:0{_DIGITS}d}"


class WorkerPoolErrorTable(OutboxRows):
    def __init__(self, account: StorageAccount, marks: PublicationMarks) -> None:
        super().__init__(account.table(TABLE), marks)

    def insert(self, error: WorkerPoolErrorRecord) -> WorkerPoolErrorRecord:
        entity = {"PartitionKey": escape_key(error.worker_pool_id), "RowKey": error.row_key, "errorId": error.error_id,
                  "reported": error.reported, "kind": error.kind, "title": error.title,
                  "description": error.description, "extra": json.dumps(dict(error.extra), separators=(",", ":"))}
        etag, events = self.write(entity, None, error.outbox)
        return replace(error, etag=etag, outbox=events)

    def page(self, worker_pool_id: str, after: str, limit: int, error_id: str | None = None
             ) -> list[tuple[str, WorkerPoolErrorRecord]]:
        """Up to `limit` errors of the pool, newest first, after the row key `after`, each with
        its row key; only the error `error_id` when given."""
        query, parameters = "PartitionKey eq @pk and RowKey gt @after", {"pk": escape_key(worker_pool_id),
                                                                           "after": after}
        if error_id is not None:
            query += " and errorId eq @errorId"
            parameters["errorId"] = error_id
        return [(entity["RowKey"], _record(worker_pool_id, entity))
                for entity in first_rows(self._table, query, parameters, limit)]

    def all(self, worker_pool_id: str) -> list[WorkerPoolErrorRecord]:
        """Every error of the pool (a week's at most: older ones are dropped)."""
        rows = self._table.query_entities("PartitionKey eq @pk", parameters={"pk": escape_key(worker_pool_id)})
        return [_record(worker_pool_id, entity) for entity in rows]

    def drop_older_than(self, worker_pool_id: str, moment: str, limit: int = 100) -> int:
        """Delete up to `limit` of the pool's errors reported before `moment`; how many."""
        keys = [entity["RowKey"] for entity in first_rows(
            self._table, "PartitionKey eq @pk and RowKey gt @oldest",
            {"pk": escape_key(worker_pool_id), "oldest": _newest_first(moment) + "/"}, limit, ["RowKey"])]
        delete_rows(self._table, escape_key(worker_pool_id), keys)
        return len(keys)


def _record(worker_pool_id: str, entity) -> WorkerPoolErrorRecord:
    return WorkerPoolErrorRecord(worker_pool_id, entity["errorId"], entity["reported"], entity["kind"],
                                 entity["title"], entity["description"], json.loads(entity["extra"]),
                                 outbox.from_entity(entity), entity.metadata.get("etag"))
