"""Single-partition transactions of at most 100 operations (Azure's limit; Azurite answers
a larger batch with a malformed response instead of an error)."""

from __future__ import annotations

from itertools import groupby

from azure.core import MatchConditions
from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError

from shared.runtime.thread_pools import BATCH_WRITES
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.queries import first_rows
from shared.storage.patterns.shared_writes import SharedWrites
from shared.storage.client.table import Table

MAX_BATCH = 100


def upsert_in_batches(table: Table, rows: list[dict]) -> int:
    """Upsert `rows`, grouped by partition, 100 to a transaction; returns transactions sent.

    The transactions are sent concurrently, within a partition too: a 10,000-task graph
    writes tens of thousands of rows, and one request at a time would leave both storage
    and this process mostly waiting. The call returns when all are written, or raises the
    first failure (the call is then repeated whole: every row is an upsert). Rows keep
    their order within a partition, so rows written together (a member and its unresolved
    marker) land in the same transaction unless a batch boundary splits them, which
    MAX_BATCH being even prevents for pairs.
    """
    return upsert_in_tables([(table, rows)])


def upsert_in_tables(tables: list[tuple[Table, list[dict]]]) -> int:
    """`upsert_in_batches` for rows of several tables at once (a sharded table's)."""
    chunks = []
    for table, rows in tables:
        ordered = sorted(_merged(rows).values(), key=lambda row: row["PartitionKey"])
        chunks += [(table, chunk) for _, group in groupby(ordered, key=lambda row: row["PartitionKey"])
                   for chunk in _chunks(list(group))]
    if len(chunks) == 1:
        _upsert(*chunks[0])
    else:
        for _ in BATCH_WRITES.map(lambda job: _upsert(*job), chunks):
            pass
    return len(chunks)


def _merged(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """One row per key, the later's values winning, as two upserts sent in turn would leave
    it: a transaction holding a key twice is refused whole (a deadline sweep that met a task
    through two items of its group once wrote its expiry twice in one batch, and failed so on
    every run after)."""
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["PartitionKey"], row["RowKey"])
        merged[key] = {**merged[key], **row} if key in merged else row
    return merged


def _chunks(group: list[dict]) -> list[list[dict]]:
    return [group[start:start + MAX_BATCH] for start in range(0, len(group), MAX_BATCH)]


def _upsert(table: Table, chunk: list[dict]) -> None:
    if len(chunk) <= MAX_BATCH // 2:     # a large chunk is a transaction of its own already
        _SHARED.upsert(table, chunk)
    else:
        _send(table, chunk)


def _send(table: Table, chunk: list[dict]) -> None:
    if len(chunk) == 1:
        table.upsert_entity(chunk[0])
    else:
        table.submit_transaction([("upsert", row) for row in chunk])


_SHARED = SharedWrites(_send)   # concurrent writers of one partition share a transaction


def delete_in_batches(table: Table, keys: list[tuple[str, str]]) -> None:
    """Delete rows given as (PartitionKey, RowKey), grouped by partition as `delete_rows` does."""
    for partition, same in groupby(sorted(keys), key=lambda key: key[0]):
        delete_rows(table, partition, [row_key for _, row_key in same])


def delete_rows(table: Table, partition: str, row_keys: list[str]) -> None:
    """Delete rows of one partition, 100 to a transaction (a single row alone). A row already
    gone fails its whole transaction, so that chunk is deleted row by row instead (deleting
    twice is not an error)."""
    if len(row_keys) == 1:
        delete_row(table, partition, row_keys[0])
        return
    for start in range(0, len(row_keys), MAX_BATCH):
        chunk = row_keys[start:start + MAX_BATCH]
        try:
            table.submit_transaction([("delete", {"PartitionKey": partition, "RowKey": key}) for key in chunk])
        except (TableTransactionError, ResourceNotFoundError):
            for key in chunk:
                delete_row(table, partition, key)


def delete_row(table: Table, partition: str, row_key: str) -> None:
    try:
        table.delete_entity(partition, row_key)
    except ResourceNotFoundError:
        pass  # deleted before: every delete may be repeated


def delete_if_unchanged(table: Table, partition: str, row_key: str, etag: str | None, name: str) -> None:
    """Delete a row if it is still as read (its `etag`); else ChangedSinceRead(name). Gone
    already is fine, as for every delete."""
    try:
        table.delete_entity(partition, row_key, etag=etag, match_condition=MatchConditions.IfNotModified)
    except ResourceNotFoundError:
        pass
    except ResourceModifiedError as exc:
        raise ChangedSinceRead(name) from exc


def delete_partition(table: Table, partition: str, last: str = "") -> int:
    """Delete a whole partition a page of keys at a time (never loading it all), the row
    `last` (if given) after all others; returns rows deleted."""
    deleted = 0
    while True:
        keys = [row["RowKey"] for row in first_rows(table, "PartitionKey eq @pk and RowKey ne @last",
                                                    {"pk": partition, "last": last}, MAX_BATCH, ["RowKey"])]
        if not keys:
            break
        delete_rows(table, partition, keys)
        deleted += len(keys)
    if last:
        delete_row(table, partition, last)
    return deleted
