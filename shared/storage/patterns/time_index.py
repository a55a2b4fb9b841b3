"""Time-ordered index rows: "at time T, look at item X", read only when they come due.

Each index is a table of its own (`TimeIndex<Name>`, with its sweep's cursor row), so that a
sweep's queries never pass over another index's rows: Azurite answers a query over a range
of partitions by evaluating it against every row of the table, and the task expiry index
holds an item for every task that finished within a year, which each firing of every other
sweep (every few seconds) walked when all indexes shared one table (bench.table_size).

PartitionKey = `<index name>.<bucket>.<spread>` where a bucket is some minutes (or a day)
of the due time and the spread one of its SPREAD partitions (see below), RowKey = `<due
time ISO>.<item key>`. A sweep walks the buckets from its cursor up to now and reads only
rows whose due time has passed, so its cost follows what is due, never how much is stored.
Rows are hints: the sweeper checks the real row before acting, so an obsolete index row (a
claim that was reclaimed since) costs one read and nothing else.

Tasks created together often share a deadline and an expiry (a decision task's, a
graph's): in one partition, a 100,000-task graph's deadline rows were a partition that
Azurite walks for every write (it finds a row by scanning its partition), and that Azure
serves at 2,000 entities/s; 4 partitions still left 25,000 rows each, and walking them was
a large part of Azurite's work while the graph was created. So rows due at the same time
and written at once, more than TOGETHER of them (a graph part's deadlines, a sweep's batch
of a group's expiries), go to one of the bucket's SPREAD partitions chosen by a hash of
the write's first key: one transaction per 100 rows, and a graph's parts spread over all.
Other rows (a task created by itself) go to the bucket's first partition. Hashing each row
by its own key cost a lifecycle 0.6 round trips more, since a sweep writes and deletes a
transaction per partition.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.domain.timestamps import parse_iso, to_iso
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_in_batches, upsert_in_batches
from shared.storage.patterns.queries import first_rows, row_or_none

CURSOR_PARTITION = "cursors"
SPREAD = 32     # partitions a time bucket's rows written together are spread over
TOGETHER = 16   # rows due at one time in one write beyond which they are spread
# The cursor stays this far behind now, so rows written by a host whose clock runs a
# little behind ours still land at or after the cursor.
CURSOR_LAG = timedelta(minutes=10)


def table_name(index: str) -> str:
    """The table of the index named `index` (e.g. "group-watch": TimeIndexGroupWatch)."""
    return "TimeIndex" + "".join(word.capitalize() for word in re.split(r"[^A-Za-z0-9]+", index))


@dataclass(frozen=True)
class DueItem:
    bucket: str
    row_key: str
    due: str
    key: str        # what the item is about, e.g. "<taskId>" or "<taskId>.<runId>"
    value: str = "" # what its writer noted for its reader, if anything


class TimeIndex:
    def __init__(self, account: StorageAccount, name: str, bucket: timedelta = timedelta(minutes=1)) -> None:
        self._table = account.table(table_name(name))
        self.name = name
        self.bucket = bucket

    def _bucket_of(self, moment: datetime) -> datetime:
        epoch = datetime(2000, 1, 1, tzinfo=moment.tzinfo)
        return epoch + ((moment - epoch) // self.bucket) * self.bucket

    def _partition(self, bucket: datetime, spread_by: str) -> str:
        """The bucket's partition for rows spread by `spread_by`, or its first (no spread)."""
        return f"{self._prefix(bucket)}{zlib.crc32(spread_by.encode()) % SPREAD if spread_by else 0:02d}"

    def _prefix(self, bucket: datetime) -> str:
        """What the partitions of a time bucket begin with."""
        return f"{self.name}.{bucket.strftime('%Y%m%dT%H%M')}."

    def add(self, items: list[tuple[str, str]], values: dict[str, str] | None = None) -> None:
        """Index (due time ISO, item key) pairs, with `values` by key for those that have one."""
        values = values or {}
        buckets = [self._bucket_of(parse_iso(due)) for due, _ in items]
        together = Counter(due for due, _ in items)
        first = {}   # due time -> the key of its first row in this write
        for due, key in items:
            first.setdefault(due, key)
        upsert_in_batches(self._table, [{
            "PartitionKey": self._partition(bucket, first[due] if together[due] > TOGETHER else ""),
            "RowKey": f"{due}.{key}", "due": due, "key": key, **({"value": values[key]} if key in values else {}),
        } for bucket, (due, key) in zip(buckets, items)])

    def put(self, due: str, key: str, value: str) -> None:
        """Index one item with a value of its own, which `get` reads back."""
        self.add([(due, key)], {key: value})

    def get(self, due: str, key: str) -> str | None:
        """The value `put` for an item, or None."""
        entity = row_or_none(self._table, self._partition(self._bucket_of(parse_iso(due)), ""), f"{due}.{key}",
                             select=["value"])
        return entity.get("value") if entity is not None else None

    def due(self, now: datetime, limit: int) -> list[DueItem]:
        """Up to `limit` items due at `now`, oldest buckets first; advances the cursor past
        buckets that are behind it and empty."""
        found: list[DueItem] = []
        bucket = self._cursor(now)
        last = self._bucket_of(now)
        cursor_can_move = True
        while bucket <= last and len(found) < limit:
            rows = self._rows(bucket, now, limit - len(found))
            found += rows
            if rows or bucket + self.bucket > now - CURSOR_LAG:
                cursor_can_move = False  # the bucket may still get rows, or hold rows not yet due
            elif cursor_can_move:
                self._save_cursor(bucket + self.bucket)
            bucket += self.bucket
        return found

    def remove(self, items: list[DueItem]) -> None:
        """Delete handled items, one transaction per bucket (items already gone are no error)."""
        delete_in_batches(self._table, [(item.bucket, item.row_key) for item in items])

    def _rows(self, bucket: datetime, now: datetime, limit: int) -> list[DueItem]:
        """Due rows of a time bucket, over its partitions (in due order within each)."""
        prefix = self._prefix(bucket)
        rows = [DueItem(row["PartitionKey"], row["RowKey"], row["due"], row["key"], row.get("value") or "")
                for row in first_rows(self._table, "PartitionKey gt @low and PartitionKey lt @high and RowKey le @now",
                                      {"low": prefix, "high": prefix[:-1] + "/", "now": to_iso(now) + "~"}, limit,
                                      ["PartitionKey", "RowKey", "due", "key", "value"])]
        return [row for row in rows if parse_iso(row.due) <= now][:limit]

    def _cursor(self, now: datetime) -> datetime:
        cursor = row_or_none(self._table, CURSOR_PARTITION, self.name)
        if cursor is None:
            return self._earliest() or self._bucket_of(now - CURSOR_LAG)
        return parse_iso(cursor["bucket"])

    def _earliest(self) -> datetime | None:
        """The first bucket holding rows: where a sweeper with no cursor yet must begin."""
        first = first_rows(self._table, "PartitionKey gt @start and PartitionKey lt @end",
                           {"start": f"{self.name}.", "end": f"{self.name}/"}, 1, ["due"])
        return self._bucket_of(parse_iso(first[0]["due"])) if first else None

    def _save_cursor(self, bucket: datetime) -> None:
        self._table.upsert_entity({"PartitionKey": CURSOR_PARTITION, "RowKey": self.name, "bucket": to_iso(bucket)})
