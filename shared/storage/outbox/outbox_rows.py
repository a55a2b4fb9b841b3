"""Rows that each keep an outbox of their own (a worker pool's, a worker's, a pool error's):
the write that stamps the events with the row, and the two calls the event publisher makes
on such a table (`load_outbox`, `clear_outbox`), in one place for every such table.

A row is named to the publisher by one string, `<PartitionKey>/<RowKey>`: partition keys
are escaped (`keys.escape_key`), so the first '/' is where the row key begins.
"""

from __future__ import annotations

from shared.domain.task_events import Event
from shared.storage.client import lost_responses
from shared.storage.client.table import Table
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox import outbox
from shared.storage.outbox.publication_marks import PublicationMarks


def row_name(partition_key: str, row_key: str) -> str:
    return f"{partition_key}/{row_key}"


class OutboxRows:
    """The outbox side of one table: `write` a row with its events, and what the publisher
    asks of the table (an adapter hands these two methods on, or inherits them)."""

    def __init__(self, table: Table, marks: PublicationMarks) -> None:
        self._table = table
        self.marks = marks

    def write(self, entity: dict, etag: str | None, events: tuple[Event, ...]) -> tuple[str, tuple[Event, ...]]:
        """Insert `entity` (etag None) or merge it over the row as read, with `events` in its
        outbox; the new ETag and the outbox as written. AlreadyExists or ChangedSinceRead
        when storage refuses (the events were then never stored)."""
        carried, events = events, self.marks.prepare(self, row_name(entity["PartitionKey"], entity["RowKey"]), events)
        try:
            meta = lost_responses.write(self._table, {**entity, **outbox.to_columns(events)}, etag)
        except (AlreadyExists, ChangedSinceRead) as error:
            self.marks.refused(events, error, carried)
            raise
        return meta.get("etag"), events

    def load_outbox(self, key: str) -> tuple[tuple[Event, ...], str] | None:
        partition_key, row_key = key.split("/", 1)
        return outbox.load(self._table, partition_key, row_key)

    def clear_outbox(self, key: str, published: list[str], etag: str, kept: tuple[Event, ...] | None = None) -> None:
        partition_key, row_key = key.split("/", 1)
        outbox.clear(self._table, partition_key, row_key, published, etag, kept)
