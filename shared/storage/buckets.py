"""Rows that come one per task of a group or graph (or per dependent of a task), spread
over bucket partitions.

A partition that grows with the work makes each of its operations cost more: Azurite
finds a row by scanning its partition (an index narrows the table to the partition, not to
the row), so writing a group's 20,000 member rows, or a graph's 30,000 label, task and open
rows, into one partition cost time quadratic in the graph (most of what Azurite did while a
10,000-task graph was created), and Azure serves one partition at about 2,000 entities/s.

So such rows live in the partition "<owner>~<c>", where <c> is the first character of the
task's id. Task ids are slugids, whose first character takes 32 values about evenly (64 in
general, 32 in the "nice" slugids clients make), so a bucket holds a few percent of the
rows; the price is that writing or deleting an owner's rows takes a transaction per bucket
instead of one or two. A part of a graph is its tasks in taskId order (see `graph_parts`),
so its rows fall in few buckets. Two characters (2,048 buckets) would keep a 100,000-task
graph's buckets at 50 rows instead of 3,000, but cost a 500-task graph 4 more operations a
task (its rows of the graph, the group and the fan-in's requirements about one a bucket, a
transaction each; and a completing task's bucket empty more often than not, so a second
query) and the expiry of a group of 100 its members' rows deleted a transaction each: the
width would have to follow the owner's size. The buckets of an owner sort together (after
its own partition: '~' sorts after every slugid character) and in the order of that
character, so a range query over them reads the rows in task id order, as one partition
did.
"""

from __future__ import annotations

from azure.data.tables import TableClient

from ..domain.ids import SLUGID_CHARACTERS
from .batches import MAX_BATCH, delete_in_batches
from .queries import first_rows

SEPARATOR = "~"
IN_BUCKETS = "PartitionKey gt @low and PartitionKey lt @high"   # with `bucket_range(owner)`


def bucket(owner: str, task_id: str) -> str:
    """The partition of `owner`'s row for task `task_id`."""
    return f"{owner}{SEPARATOR}{task_id[:1]}"


def all_buckets(owner: str) -> list[str]:
    """Every partition `bucket` may give `owner`'s rows (a task id is a slugid)."""
    return [f"{owner}{SEPARATOR}{first}" for first in SLUGID_CHARACTERS]


def bucket_range(owner: str) -> dict:
    """The parameters of IN_BUCKETS for every bucket of `owner`."""
    return {"low": owner + SEPARATOR, "high": owner + SEPARATOR * 2}


def _end(prefix: str) -> str:
    """'/' sorts right after '.': (prefix, _end(prefix)) holds exactly the prefix's keys
    (a prefix ends with '.'; no prefix: every task id, which all sort before '~')."""
    return prefix[:-1] + "/" if prefix else SEPARATOR


def first_keys(table: TableClient, owner: str, prefix: str, after_task_id: str, limit: int) -> list[str]:
    """Up to `limit` task ids of `owner`'s rows `<prefix><taskId>`, in task id order, after
    `after_task_id` (from the first if empty)."""
    return [row["RowKey"][len(prefix):] for row in first_bucket_rows(table, owner, prefix, after_task_id, limit)]


def first_bucket_rows(table: TableClient, owner: str, prefix: str, after_task_id: str, limit: int,
                      select: list[str] | None = None) -> list:
    """Up to `limit` of `owner`'s rows `<prefix><taskId>` (their `select` columns, RowKey
    by default), in task id order, after `after_task_id` (from the first if empty)."""
    span = {**bucket_range(owner), "start": prefix, "end": _end(prefix)}
    select = select or ["RowKey"]
    rows = []
    if after_task_id:
        span["low"] = bucket(owner, after_task_id)   # the rest of its bucket, then the buckets after it
        rows = _rows_in(table, span["low"], prefix + after_task_id, span["end"], limit, select)
    if len(rows) < limit:
        rows += first_rows(table, IN_BUCKETS + " and RowKey gt @start and RowKey lt @end", span,
                           limit - len(rows), select)
    return rows


def _rows_in(table: TableClient, partition: str, start: str, end: str, limit: int,
             select: list[str] | None = None) -> list:
    """Up to `limit` rows of one bucket with keys in (start, end)."""
    return first_rows(table, "PartitionKey eq @pk and RowKey gt @start and RowKey lt @end",
                      {"pk": partition, "start": start, "end": end}, limit, select or ["RowKey"])


def forget_buckets(table: TableClient, owner: str) -> int:
    """Delete every row of `owner`'s buckets, a page of keys at a time; returns rows deleted."""
    deleted = 0
    while True:
        keys = [(row["PartitionKey"], row["RowKey"])
                for row in first_rows(table, IN_BUCKETS, bucket_range(owner), MAX_BATCH, ["PartitionKey", "RowKey"])]
        if not keys:
            return deleted
        delete_in_batches(table, keys)
        deleted += len(keys)
