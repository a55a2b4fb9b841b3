"""The outbox: events of a change, kept in the columns of the row whose change they
announce (a task's row, a group's, an artifact's), so an event is written in the same
atomic write as its change and can never exist without it, nor the change without it.

Published events are not cleared by a write of their own: the next write of the row,
which happens anyway, leaves out those known to be out (see `publication_marks`). Only a
recovery, which publishes events another writer left, clears them, by a write conditional
on the ETag the publisher knows; if the row changed since, it is read again and only the
published events are removed. A row keeps at most OUTBOX_CHARS of events (about 60 events
of a task with a few runs; a task only has that many unpublished when the bus has been down
through most of its life): past that the oldest are dropped, with an error logged, rather
than refusing the change.
"""

from __future__ import annotations

import logging
from typing import Iterable

from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

from shared.domain import task_events
from shared.domain.task_events import Event
from shared.storage.patterns import long_text
from shared.storage.client import lost_responses
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.patterns.queries import row_or_none

log = logging.getLogger("queue.events")
NAME = "outbox"
CHUNKS = 2
OUTBOX_CHARS = CHUNKS * long_text.CHUNK
COLUMNS = [f"{NAME}Chunks", *(f"{NAME}{i}" for i in range(CHUNKS))]


def to_columns(events: tuple[Event, ...]) -> dict:
    text = task_events.encode(events)
    while len(text) > OUTBOX_CHARS:
        log.error("outbox full: event %s dropped unpublished", events[0].id, extra={"eventId": events[0].id})
        events = events[1:]
        text = task_events.encode(events)
    return long_text.to_columns(NAME, text)


def from_entity(entity) -> tuple[Event, ...]:
    if not entity.get(f"{NAME}Chunks"):
        return ()
    return task_events.decode(long_text.from_columns(NAME, entity))


def load(table, partition_key: str, row_key: str) -> tuple[tuple[Event, ...], str] | None:
    """The row's unpublished events and its ETag; None if the row is gone."""
    entity = row_or_none(table, partition_key, row_key, select=COLUMNS)
    return (from_entity(entity), entity.metadata.get("etag")) if entity is not None else None


def clear(table, partition_key: str, row_key: str, published: Iterable[str], etag: str,
          kept: tuple[Event, ...] | None = None) -> tuple[tuple[Event, ...], str, str] | None:
    """Remove the `published` event ids from the row's outbox; `kept` is the outbox as the
    caller knows it at `etag` (read again when the row has changed since). When it wrote:
    the outbox left, the ETag the write replaced and the row's new ETag."""
    published = set(published)

    def write(found: tuple[tuple[Event, ...], str] | None) -> tuple[tuple[Event, ...], str, str] | None:
        if found is None:
            return None   # the row is gone (expired): nothing left to announce
        events, read_etag = found
        remaining = tuple(event for event in events if event.id not in published)
        if len(remaining) == len(events):
            return None
        entity = {"PartitionKey": partition_key, "RowKey": row_key, **to_columns(remaining)}
        try:
            meta = lost_responses.update(table, entity, read_etag)
        except (ResourceModifiedError, ResourceNotFoundError):
            raise ChangedSinceRead(row_key)
        return remaining, read_etag, meta.get("etag")

    def gave_up() -> None:
        log.warning("outbox of %s/%s not cleared: the row keeps changing; its events may be published again",
                    partition_key, row_key)
    return until_written(lambda: load(table, partition_key, row_key), write,
                         (kept, etag) if kept is not None else None, gave_up)
