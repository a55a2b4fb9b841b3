"""Surviving a lost response: a request that reached storage whose answer never came back.

A connection can drop after a write was sent (a keep-alive connection the server closed
at that moment, a proxy, a restart), and storage near its limits answers `500
OperationTimedOut` for a write it may have carried out; either way the write may or may
not have landed. Requests whose repetition is harmless (reads, upserts, deletes,
transactions of those, table creation) are sent again by the table client (`table.py`).
Those that are not harmless to repeat, an insert, a conditional write, and a transaction
holding either, are never repeated blindly: their rows carry a fresh `writeId` and, after
an uncertain answer, are read back to learn whether the write landed, was beaten by another
writer, or never arrived (then it is sent again). `insert` and `update` do it for one row;
`transaction` for an entity group transaction, which `Table.submit_transaction` always goes
through, so every caller of a transaction is served.

A row is known for a write's own by its `writeId` alone: a writer that changed it since
without writing a `writeId` of its own (a plain merge) would have its version taken for
this write's, and its ETag answered. So every writer of a row whose ETag is kept for a
later conditional write (a task's, a worker's, a count's) writes a `writeId` of its own.

Without this, a claim whose answer was lost would look to its writer like a claim lost to
another worker, and the task would sit claimed by nobody until its claim expired; and a
transaction of new tasks that timed out after it landed was sent again, refused for its
own rows, and its stored events taken for never stored (the next writer dropped them
unpublished).
"""

from __future__ import annotations

import time
from typing import Callable, Protocol

from azure.core import MatchConditions
from azure.core.exceptions import (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError,
                                   ServiceRequestError, ServiceResponseError)
from azure.data.tables import TableTransactionError, UpdateMode

from shared.storage.client.connections import backoff
from shared.storage.client.unique_ids import unique_id
from shared.storage.errors import AlreadyExists, ChangedSinceRead

WRITE_ID = "writeId"
ATTEMPTS = 5
_LOST = (ServiceRequestError, ServiceResponseError)
_REFUSALS = (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError)
_TRANSACTION_REFUSALS = (TableTransactionError, *_REFUSALS)
_REPEATABLE = {"upsert", "delete"}
# The ETag answered for a row a settled transaction wrote and another writer has changed
# since: one no row has (a Table service ETag of the year 2000), so that a conditional write
# from it is refused and its writer reads the row again, never taking the other's version
# for its own.
SUPERSEDED = "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\""


class Rows(Protocol):
    """What this module needs of a table (`table.Table`, or the tests' in-memory one)."""

    def create_entity(self, entity: dict) -> dict: ...
    def update_entity(self, entity: dict, mode=..., etag=None, match_condition=None) -> dict: ...
    def get_entity(self, partition_key: str, row_key: str, select=None): ...
    def query_entities(self, query_filter: str, parameters=None, select=None): ...


def unrepeatable(method: str, url: str, if_match: str) -> bool:
    """A single-row insert or conditional write: its outcome must be verified, not re-sent.
    A delete, even a conditional one, may be sent again: if the first landed, the second finds
    the row gone, which every delete here takes as done. (A transaction says by its
    operations: `repeatable`.)"""
    if method.upper() == "DELETE":
        return False
    if if_match != "*":
        return True
    path = url.split("?", 1)[0].rstrip("/")
    return method.upper() == "POST" and not path.endswith("/Tables")


def repeatable(operations: list[tuple]) -> bool:
    """Whether a transaction may simply be sent again: only upserts and deletes (a repeated
    delete refuses the whole transaction for a row gone, which its callers take as done)."""
    return all(operation[0] in _REPEATABLE for operation in operations)


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


def transaction(table: Rows, operations: list[tuple], send: Callable[[list[tuple], bool], list[dict]]) -> list[dict]:
    """`send(operations, repeatable)` of a transaction (one partition, applied all or none),
    knowing its outcome: one that is not `repeatable` has a `writeId` on every row it writes,
    and after an uncertain answer the rows bearing it are looked for. Found: it landed, and
    each write's answer is its row's ETag as read (SUPERSEDED if another writer changed the
    row since). None: it never landed, and is sent again; refused then, the refusal is raised
    (TableTransactionError, as storage refuses a transaction)."""
    if repeatable(operations):
        return send(operations, True)
    write_id = unique_id()
    operations = [operation if operation[0] == "delete" else
                  (operation[0], {**operation[1], WRITE_ID: write_id}, *operation[2:]) for operation in operations]
    uncertain: Exception | None = None
    for attempt in range(ATTEMPTS):
        refused = None
        try:
            return send(operations, False)
        except _LOST as lost:
            uncertain = lost
        except _TRANSACTION_REFUSALS as refusal:
            if uncertain is None:
                raise       # a plain refusal: another writer's row or change
            refused = refusal   # or our own earlier attempt's rows: look
        written = _written_by(table, operations[0][1]["PartitionKey"], write_id)
        if written:
            return [{} if kind == "delete" else {"etag": written.get(row["RowKey"], SUPERSEDED)}
                    for kind, row, *_ in operations]
        if refused is not None:
            # None of the rows bears the write: it never landed, or it landed and another
            # writer has changed every row since. Storage's refusal stands, unsure.
            raise _unsure(refused)
        if attempt + 1 < ATTEMPTS:
            time.sleep(backoff(attempt))
    raise uncertain


def _written_by(table: Rows, partition: str, write_id: str) -> dict[str, str]:
    """The rows of `partition` the write `write_id` left as it wrote them: RowKey -> ETag.
    One query of the partition (a transaction writes a hundred rows at most)."""
    rows = table.query_entities("PartitionKey eq @pk and writeId eq @id", parameters={"pk": partition, "id": write_id},
                                select=["RowKey", WRITE_ID])
    return {row["RowKey"]: row.metadata.get("etag") for row in rows}


def maybe_landed(error: BaseException | None) -> bool:
    """Whether `error` (or what it was raised from) is a refusal that came after an uncertain
    answer: the write may have landed and been changed by another writer since, the row
    showing no trace of it but what that writer carried over (an outbox's events)."""
    while error is not None:
        if getattr(error, "maybe_landed", False):
            return True
        error = error.__cause__ or error.__context__
    return False


def _unsure(refusal: Exception) -> Exception:
    refusal.maybe_landed = True
    return refusal


def _with_write_id(entity: dict) -> dict:
    return {**entity, WRITE_ID: unique_id()}


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
        try:
            _raise_unless_unchanged(row, before, entity)
        except _REFUSALS as refusal:
            raise _unsure(refusal)
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
