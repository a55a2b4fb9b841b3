"""The Artifacts table: one row per artifact of a run.

PartitionKey = taskId, RowKey = `<runId, 4 digits>.<name as a key>` (see `keys.bounded_key`):
a task's artifacts are one partition, listed and deleted without a scan, and a run's are a
range of it in name order. Every row is written by `save`, the one write of this table (an
insert, or a merge conditional on the ETag read), so whatever must go with an artifact's
write (an event's outbox column) has one place to go.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


from shared.domain.artifacts import Artifact, StorageType
from shared.domain.task_events import Event
from shared.storage.client import lost_responses
from shared.storage.outbox import outbox
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_row
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.keys import bounded_key
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.queries import first_rows, row_or_none

_COLUMNS = ["name", "storageType", "contentType", "expires", "present", "details", "contentLength", "hashes", "size"]


@dataclass(frozen=True)
class ArtifactRecord:
    artifact: Artifact
    etag: str | None = None
    outbox: tuple[Event, ...] = ()   # its artifact-created event, until published

    @property
    def key(self) -> str:
        """The row as one string, for the event publisher: `<taskId>/<RowKey>`."""
        return f"{self.artifact.task_id}/{row_key(self.artifact.run_id, self.artifact.name)}"


def row_key(run_id: int, name: str) -> str:
    return f"{run_id:04d}.{bounded_key(name)}"


class ArtifactTable:
    def __init__(self, account: StorageAccount, marks: PublicationMarks | None = None) -> None:
        self._table = account.table("Artifacts")
        self.marks = marks or PublicationMarks(account)

    def load(self, task_id: str, run_id: int, name: str) -> ArtifactRecord | None:
        entity = row_or_none(self._table, task_id, row_key(run_id, name), select=_COLUMNS + outbox.COLUMNS)
        return _record(task_id, run_id, entity) if entity is not None else None

    def save(self, artifact: Artifact, etag: str | None = None, events: tuple[Event, ...] = ()) -> ArtifactRecord:
        """Write `artifact`, with `events` in its outbox: a new row when `etag` is None
        (AlreadyExists if there is one), else over the row as read with that ETag
        (ChangedSinceRead if it changed since)."""
        carried, events = events, self.marks.prepare(self, f"{artifact.task_id}/{row_key(artifact.run_id, artifact.name)}",
                                                     events)
        entity = {
            "PartitionKey": artifact.task_id, "RowKey": row_key(artifact.run_id, artifact.name),
            "name": artifact.name, "storageType": artifact.storage_type.value,
            "contentType": artifact.content_type, "expires": artifact.expires, "present": artifact.present,
            "details": json.dumps(artifact.details, separators=(",", ":")),
            # Strings: lengths pass the 32 bits a plain integer column holds.
            "contentLength": _text(artifact.content_length),
            "hashes": json.dumps(artifact.hashes, separators=(",", ":")),
            "size": _text(artifact.size),
            **outbox.to_columns(events),
        }
        try:
            meta = lost_responses.write(self._table, entity, etag)
        except (AlreadyExists, ChangedSinceRead) as error:
            self.marks.refused(events, error, carried)
            raise
        return ArtifactRecord(artifact, meta.get("etag"), events)

    def load_outbox(self, key: str) -> tuple[tuple[Event, ...], str] | None:
        task_id, row = key.split("/", 1)
        return outbox.load(self._table, task_id, row)

    def clear_outbox(self, key: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None:
        task_id, row = key.split("/", 1)
        outbox.clear(self._table, task_id, row, published, etag, kept)

    def page(self, task_id: str, run_id: int, after: str, limit: int) -> list[tuple[str, ArtifactRecord]]:
        """Up to `limit` artifacts of a run whose row keys come after `after` (empty: from
        the first), in key order, each with its row key (for a continuation token)."""
        start = max(after, f"{run_id:04d}.")
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @start and RowKey lt @end",
                          {"pk": task_id, "start": start, "end": f"{run_id:04d}/"}, limit, ["RowKey", *_COLUMNS])
        return [(row["RowKey"], _record(task_id, run_id, row)) for row in rows]

    def delete(self, task_id: str, run_id: int, name: str) -> None:
        delete_row(self._table, task_id, row_key(run_id, name))


def _record(task_id: str, run_id: int, entity) -> ArtifactRecord:
    artifact = Artifact(task_id, run_id, entity["name"], StorageType(entity["storageType"]), entity["contentType"],
                        entity["expires"], bool(entity["present"]), json.loads(entity["details"]),
                        _number(entity.get("contentLength")), json.loads(entity.get("hashes") or "{}"),
                        _number(entity.get("size")))
    return ArtifactRecord(artifact, entity.metadata.get("etag"), outbox.from_entity(entity))


def _text(number: int | None) -> str:
    return "" if number is None else str(number)


def _number(text: str | None) -> int | None:
    return int(text) if text else None
