"""The Objects table: the object service's record of each object, whose bytes are a blob.

PartitionKey = the object's name as a key (see `keys.bounded_key`), RowKey = "object". A
row is written by `save` (an insert, or a merge conditional on the ETag read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_row
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import row_or_none

ROW = "object"


@dataclass(frozen=True)
class ObjectRecord:
    name: str
    project_id: str
    upload_id: str
    expires: str
    finished: bool = False    # the upload is complete: the object is immutable and served
    hashes: dict = field(default_factory=dict)
    content_type: str = ""
    content_length: int | None = None
    etag: str | None = None


class ObjectTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("Objects")

    def load(self, name: str) -> ObjectRecord | None:
        entity = row_or_none(self._table, bounded_key(name), ROW)
        if entity is None:
            return None
        length = entity.get("contentLength") or ""
        return ObjectRecord(entity["name"], entity["projectId"], entity["uploadId"], entity["expires"],
                            bool(entity["finished"]), json.loads(entity["hashes"]), entity["contentType"],
                            int(length) if length else None, entity.metadata.get("etag"))

    def save(self, record: ObjectRecord) -> ObjectRecord:
        """Write `record`: a new row when its `etag` is None (AlreadyExists if there is one),
        else over the row as read (ChangedSinceRead if it changed since)."""
        entity = {
            "PartitionKey": bounded_key(record.name), "RowKey": ROW, "name": record.name,
            "projectId": record.project_id, "uploadId": record.upload_id, "expires": record.expires,
            "finished": record.finished, "hashes": json.dumps(record.hashes, separators=(",", ":")), "contentType": record.content_type,
            "contentLength": "" if record.content_length is None else str(record.content_length),
        }
        meta = lost_responses.write(self._table, entity, record.etag)
        return replace(record, etag=meta.get("etag"))

    def delete(self, name: str) -> None:
        delete_row(self._table, bounded_key(name), ROW)
