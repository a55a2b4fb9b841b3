"""Surviving a lost response: a request that reached storage whose answer never came back.

A connection can drop after a write was sent (a keep-alive connection the server closed
at that moment, a proxy, a restart); the write may or may not have landed. Requests whose
repetition is harmless (reads, upserts, deletes, batches of those, table creation) are
sent again by the table client (`table.py`). The two kinds that are not harmless to repeat, an
insert and a conditional write, are never repeated blindly: `insert` and `update` give
the row a fresh `writeId` and, after a lost answer, read it back to learn whether the
write landed, was beaten by another writer, or never arrived (then it is sent again).
Without this, a claim whose answer was lost would look to its writer like a claim lost
to another worker, and the task would sit claimed by nobody until its claim expired.
"""

from __future__ import annotations

import time
import uuid
from typing import Protocol

from azure.core import MatchConditions
from azure.core.exceptions import (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError,
                                   ServiceRequestError, ServiceResponseError)
from azure.data.tables import UpdateMode

from shared.storage.client.connections import backoff
from shared.storage.errors import AlreadyExists, ChangedSinceRead

WRITE_ID = "writeId"
ATTEMPTS = 5
_LOST = (ServiceRequestError, ServiceResponseError)
_REFUSALS = (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError)


class Rows(Protocol):
    """What this module needs of a table (`table.Table`, or the tests' in-memory one)."""

    def create_entity(self, entity: dict) -> dict: ...
    def update_entity(self, entity: dict, mode=..., etag=None, match_condition=None) -> dict: ...
    def get_entity(self, partition_key: str, row_key: str, select=None): ...


def unrepeatable(method: str, url: str, if_match: str) -> bool:
    """An insert or a conditional write: its outcome must be verified, not re-sent. A delete,
    even a conditional one, may be sent again: if the first landed, the second finds the row
    gone, which every delete here takes as done."""
    if method.upper() == "DELETE":
        return False
    if if_match != "*":
        return True
    path = url.split("?", 1)[0].rstrip("/")
    return method.upper() == "POST" and not path.endswith(("$batch", "/Tables"))


def insert(table: Rows, entity: dict) -> dict:
    """`create_entity` that knows its outcome; ResourceExistsError if the row was there."""
    entity = _with_write_id(entity)
    return _certain(table, entity, lambda: table.create_entity(entity), before=None)


def update(table: Rows, entity: dict, etag: str) -> dict:
    """A merge conditional on `etag` that knows its outcome; ResourceModifiedError if the
    row changed since (ResourceNotFoundError if it is gone). A merge, because Azure's retry
    policy never resends a PATCH on its own: a conditional PUT it resent after a lost
    answer would come back 'modified' by our own first attempt."""
    entity = _with_write_id(entity)
    return _certain(table, entity, lambda: table.update_entity(
        entity, mode=UpdateMode.MERGE, etag=etag, match_condition=MatchConditions.IfNotModified), before=etag)


def write(table: Rows, entity: dict, etag: str | None) -> dict:
    """`insert` when `etag` is None, else `update`; storage's refusal as AlreadyExists (a row
    was there) or ChangedSinceRead (the row changed, or went, since it was read)."""
    try:
        return insert(table, entity) if etag is None else update(table, entity, etag)
    except ResourceExistsError as exc:
        raise AlreadyExists(entity["RowKey"]) from exc
    except (ResourceModifiedError, ResourceNotFoundError) as exc:
        raise ChangedSinceRead(entity["RowKey"]) from exc


def _with_write_id(entity: dict) -> dict:
    return {**entity, WRITE_ID: uuid.uuid4().hex}


def _certain(table: Rows, entity: dict, write, before: str | None) -> dict:
    """Send `write` until storage says what happened. `before` is the ETag the row must
    still have (None: the row must not exist) for a resend to be safe."""
    uncertain: Exception | None = None
    for attempt in range(ATTEMPTS):
        try:
            return write()
        except _LOST as lost:
            uncertain = lost
        except _REFUSALS:
            if uncertain is None:
                raise  # a plain refusal: someone else's row or change
            # A refusal after a lost answer may be our own earlier attempt: look.
        row = _current(table, entity)
        if row is not None and row.get(WRITE_ID) == entity[WRITE_ID]:
            return {"etag": row.metadata.get("etag")}
        _raise_unless_unchanged(row, before, entity)
        if attempt + 1 < ATTEMPTS:   # storage may have timed out near its limits: give it room
            time.sleep(backoff(attempt))
    raise uncertain


def _current(table: Rows, entity: dict):
    try:
        return table.get_entity(entity["PartitionKey"], entity["RowKey"], select=[WRITE_ID])
    except ResourceNotFoundError:
        return None


def _raise_unless_unchanged(row, before: str | None, entity: dict) -> None:
    """Refuse as storage would have, unless the row is as it was before the lost write."""
    where = f"{entity['PartitionKey']}/{entity['RowKey']}"
    if before is None and row is not None:
        raise ResourceExistsError(f"{where} was inserted by another writer")
    if before is not None and row is None:
        raise ResourceNotFoundError(f"{where} is gone")
    if before is not None and row.metadata.get("etag") != before:
        raise ResourceModifiedError(f"{where} was changed by another writer")
