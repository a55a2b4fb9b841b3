"""A table kept as SHARDS physical tables, each owner's rows in one of them by a hash of
the owner (the task whose dependents, or whose requirements, the rows are), or by a key of
the owner's that its table chooses (a task's row by its id's second character, see
`task_table`).

Azurite answers every query by evaluating its filter against every row of the table and
then sorting what matched (`LokiTableMetadataStore.queryTableEntities`), so a query's cost
grows with the whole table, not with what it asks for: in a 100,000-task graph two thirds
of Azurite's time went to such scans. A table whose rows belong to many owners, each read
by queries of its own, is split so that a query scans a SHARDS-th of it. In Azure, where
a query is served from its partition, the split changes nothing but the names. Every row
of one owner is in one table, so its transactions and its range queries over buckets work
as in a single table.
"""

from __future__ import annotations

import zlib
from typing import Callable, Iterable


from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import upsert_in_tables
from shared.storage.client.table import Table

SHARDS = 32


class TableShards:
    def __init__(self, account: StorageAccount, name: str, shards: int = SHARDS,
                 key: Callable[[str], int] = lambda owner: zlib.crc32(owner.encode())) -> None:
        self._account = account
        self._name = name
        self._shards = shards
        self._key = key

    def of(self, owner: str) -> Table:
        """The table holding `owner`'s rows (`<name>00` to `<name><shards - 1>`, made on first use)."""
        return self._table(self._shard(owner))

    def split(self, rows: Iterable, owner_of: Callable) -> list[tuple[Table, list]]:
        """`rows` grouped by the table of their owner (`owner_of(row)`), in their order."""
        groups: dict[int, list] = {}
        for row in rows:
            groups.setdefault(self._shard(owner_of(row)), []).append(row)
        return [(self._table(shard), part) for shard, part in groups.items()]

    def upsert(self, rows: list[tuple[str, dict]]) -> None:
        """Entities given as (owner, entity), each in its owner's table, a transaction per
        partition (see `batches.upsert_in_tables`)."""
        upsert_in_tables([(table, [entity for _, entity in part])
                          for table, part in self.split(rows, lambda row: row[0])])

    def all(self) -> list[Table]:
        """Every table of the split, in order."""
        return [self._table(shard) for shard in range(self._shards)]

    def _shard(self, owner: str) -> int:
        return self._key(owner) % self._shards

    def _table(self, shard: int) -> Table:
        return self._account.table(f"{self._name}{shard:02d}")
