"""Single-partition transactions of at most 100 operations (Azure's limit; Azurite answers
a larger batch with a malformed response instead of an error)."""

from __future__ import annotations

from itertools import groupby

from azure.data.tables import TableClient

MAX_BATCH = 100


def upsert_in_batches(table: TableClient, rows: list[dict]) -> int:
    """Upsert `rows`, grouped by partition, 100 to a transaction; returns transactions sent.

    Rows keep their order within a partition, so rows written together (a member and its
    unresolved marker) land in the same transaction unless a batch boundary splits them,
    which MAX_BATCH being even prevents for pairs.
    """
    sent = 0
    ordered = sorted(rows, key=lambda row: row["PartitionKey"])
    for _, group in groupby(ordered, key=lambda row: row["PartitionKey"]):
        group = list(group)
        for start in range(0, len(group), MAX_BATCH):
            chunk = group[start:start + MAX_BATCH]
            if len(chunk) == 1:
                table.upsert_entity(chunk[0])
            else:
                table.submit_transaction([("upsert", row) for row in chunk])
            sent += 1
    return sent
