"""Rows that come one per task of a group or graph (or per dependent of a task), spread
over bucket partitions.

A partition that grows with the work makes each of its operations cost more: Azurite
finds a row by scanning its partition (an index narrows the table to the partition, not to
the row), so writing a group's 20,000 member rows, or a graph's 30,000 label, task and open
rows, into one partition cost time quadratic in the graph (most of what Azurite did while a
10,000-task graph was created), and Azure serves one partition at about 2,000 entities/s.

So such rows live in the partition "<owner>~<c>", where <c> is the first `width` characters
of the task's id. Task ids are slugids, whose characters take 32 values about evenly (64 in
general, 32 in the "nice" slugids clients make), so a bucket of width 1 holds a few percent of
an owner's rows, and one of width 2 a thousandth. The width is the owner's, chosen when the
owner is made and never changed (a group's is on its row, see `task_group_table`): one
character for most owners, two for a graph made large (at 100,000 tasks, 3,000 rows a
bucket of width 1 made each operation of a transaction there cost 0.5 to 2 ms more in
Azurite, which finds a row by walking its partition). A wider bucket costs an owner more
transactions (a part of a graph, 100 tasks in taskId order, spans ten buckets of a
10,000-task graph instead of one or two), more buckets that empty (a query each, see
`countdown`) and more count rows to mark when a group is sealed, which only a large
owner repays. The buckets of an owner sort together (after its own partition: '~' sorts
after every slugid character) and in the order of their characters, so a range query over
them reads the rows in task id order, as one partition did.
"""

from __future__ import annotations

from heapq import merge
from itertools import islice, product

from shared.runtime.thread_pools import BUCKET_READS
from shared.domain.ids import SLUGID_CHARACTERS
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import MAX_BATCH, delete_in_batches
from shared.storage.patterns.queries import first_rows
from shared.storage.client.table import Table
from shared.storage.patterns.table_shards import TableShards

SEPARATOR = "~"
IN_BUCKETS = "PartitionKey gt @low and PartitionKey lt @high"   # with `bucket_range(owner)`
WIDE = 2       # the width of a large owner's buckets
SPREAD = "W"   # after a table's name: the tables a wide owner's buckets are spread over


def bucket(owner: str, task_id: str, width: int = 1) -> str:
    """The partition of `owner`'s row for task `task_id`, in buckets of `width` characters."""
    return f"{owner}{SEPARATOR}{task_id[:width]}"


def bucket_owner(partition: str) -> str:
    """The owner of a bucket, from its partition's name."""
    return partition.rpartition(SEPARATOR)[0]


def bucket_width(partition: str) -> int:
    """The width of a bucket, from its partition's name."""
    return len(partition.rpartition(SEPARATOR)[2])


def all_buckets(owner: str, width: int = 1) -> list[str]:
    """Every partition `bucket` may give `owner`'s rows (a task id is a slugid)."""
    return [f"{owner}{SEPARATOR}{''.join(chars)}" for chars in product(SLUGID_CHARACTERS, repeat=width)]


class BucketTables:
    """The tables an owner's buckets are in: a narrow owner's in the table itself, a wide
    owner's spread over the tables `<name>W00` to `W31`, each bucket in one by a hash of its
    partition (so a bucket's transactions work as before).

    Azurite updates and deletes a row in time that grows with its whole table, not its
    partition: LokiJS walks a table-long index for each (`adaptiveBinaryIndexUpdate`,
    `Collection.remove`), and a 100,000-task graph puts half a million rows in its group's
    buckets, where every completion deletes two and merges three: 60% of Azurite's time
    while such a graph ran. A query over a wide owner's buckets asks each of its tables (a
    32nd of the rows each) and merges what they answer."""

    def __init__(self, account: StorageAccount, name: str) -> None:
        self.table = account.table(name)
        self._spread = TableShards(account, name + SPREAD)

    def of(self, partition: str, width: int) -> Table:
        """The table of a bucket of an owner whose buckets are `width` wide."""
        return self.table if width == 1 else self._spread.of(partition)

    def all(self, width: int) -> list[Table]:
        """Every table the buckets of an owner of `width` may be in."""
        return [self.table] if width == 1 else self._spread.all()

    def query(self, width: int, query: str, parameters: dict, limit: int, select: list[str] | None = None) -> list:
        """Up to `limit` rows of every table of `width` matching `query`, in key order."""
        tables = self.all(width)
        if len(tables) == 1:
            return first_rows(tables[0], query, parameters, limit, select)
        if select:   # the keys, to merge by
            select = list(dict.fromkeys(["PartitionKey", "RowKey", *select]))
        found = BUCKET_READS.map(lambda table: first_rows(table, query, parameters, limit, select), tables)
        return sorted((row for rows in found for row in rows),
                      key=lambda row: (row["PartitionKey"], row["RowKey"]))[:limit]

    def first_keys(self, owner: str, width: int, prefix: str, after_task_id: str, limit: int) -> list[str]:
        """`first_keys` over every table of the owner's buckets."""
        rows = self.query(width, *_after(owner, prefix, after_task_id), limit, ["PartitionKey", "RowKey"])
        return [row["RowKey"][len(prefix):] for row in rows]

    def forget(self, owner: str, width: int, but: str = "") -> int:
        """`forget_buckets` in every table of the owner's buckets; rows deleted."""
        return sum(forget_buckets(table, owner, but) for table in self.all(width))

    def delete(self, width: int, keys: list[tuple[str, str]]) -> None:
        """Delete rows given as (PartitionKey, RowKey), each from its bucket's table."""
        by_table: dict[str, tuple[Table, list]] = {}
        for key in keys:
            table = self.of(key[0], width)
            by_table.setdefault(table.table_name, (table, []))[1].append(key)
        for table, same in by_table.values():
            delete_in_batches(table, same)


def first_rows_by_key(table: Table, partitions: list[str], condition: str, parameters: dict, limit: int,
                      select: list[str] | None = None) -> list:
    """Up to `limit` rows of `partitions` meeting `condition`, in RowKey order across them: the
    first `limit` of each partition, read at once, merged. For a listing whose pages follow
    the row keys of rows spread over partitions by something else (a range query over the
    partitions would answer in partition order)."""
    if select and "RowKey" not in select:   # the key to merge by
        select = [*select, "RowKey"]

    def first(partition: str) -> list:
        return first_rows(table, f"PartitionKey eq @pk and {condition}", {**parameters, "pk": partition}, limit, select)
    return list(islice(merge(*BUCKET_READS.map(first, partitions), key=lambda row: row["RowKey"]), limit))


def bucket_range(owner: str) -> dict:
    """The parameters of IN_BUCKETS for every bucket of `owner`."""
    return {"low": owner + SEPARATOR, "high": owner + SEPARATOR * 2}


def _end(prefix: str) -> str:
    """'/' sorts right after '.': (prefix, _end(prefix)) holds exactly the prefix's keys
    (a prefix ends with '.'; no prefix: every task id, which all sort before '~')."""
    return prefix[:-1] + "/" if prefix else SEPARATOR


def first_keys(table: Table, owner: str, prefix: str, after_task_id: str, limit: int) -> list[str]:
    """Up to `limit` task ids of `owner`'s rows `<prefix><taskId>`, in task id order, after
    `after_task_id` (from the first if empty)."""
    return [row["RowKey"][len(prefix):] for row in first_bucket_rows(table, owner, prefix, after_task_id, limit)]


def first_bucket_rows(table: Table, owner: str, prefix: str, after_task_id: str, limit: int,
                      select: list[str] | None = None) -> list:
    """Up to `limit` of `owner`'s rows `<prefix><taskId>` (their `select` columns, RowKey
    by default), in task id order, after `after_task_id` (from the first if empty)."""
    return first_rows(table, *_after(owner, prefix, after_task_id), limit, select or ["RowKey"])


def _after(owner: str, prefix: str, after_task_id: str) -> tuple[str, dict]:
    """The query (and its parameters) of `owner`'s rows `<prefix><taskId>` after `after_task_id`.

    One range query whatever the width: it begins at the bucket of width 1 of
    `after_task_id`, the first that may hold later rows; a row of a later bucket has a later
    task id, so its key passes `RowKey gt <prefix><after_task_id>` too."""
    return ("PartitionKey ge @low and PartitionKey lt @high and RowKey gt @start and RowKey lt @end",
            {"low": owner + SEPARATOR + after_task_id[:1], "high": owner + SEPARATOR * 2,
             "start": prefix + after_task_id, "end": _end(prefix)})


def forget_buckets(table: Table, owner: str, but: str = "") -> int:
    """Delete every row of `owner`'s buckets (but those of RowKey `but`: the owner's own row
    kept there, deleted last), a page of keys at a time; returns rows deleted."""
    deleted = 0
    query, parameters = IN_BUCKETS, bucket_range(owner)
    if but:
        query, parameters = query + " and RowKey ne @but", {**parameters, "but": but}
    while True:
        keys = [(row["PartitionKey"], row["RowKey"])
                for row in first_rows(table, query, parameters, MAX_BATCH, ["PartitionKey", "RowKey"])]
        if not keys:
            return deleted
        delete_in_batches(table, keys)
        deleted += len(keys)
