"""Rows that say a task still has something ahead of it (a group member not resolved yet, a
graph label not completed), counted per bucket, so that "is any left?" after a completion is
answered by the count the completion's own write leaves, not by a query.

That question is asked after every completion, and Azurite answers any query by scanning its
whole table and sorting what matches (`LokiTableMetadataStore.queryTableEntities`): 7 ms at
20,000 rows and 15 ms at 100,000, against 2 to 3 ms for a point read or write, however
narrow the query. In a large graph those two queries per completion were most of what
storage did.

Each bucket partition of an owner (see `buckets`) holds a count row "~<name>" (column
`count`): how many counted rows "<prefix><taskId>" the bucket holds. A row is added with a
marker "<marker><taskId>" (both inserted, in one transaction with the bucket's count,
conditional on the count's ETag) and removed (deleted, in one transaction with the count),
so the count is exact: a row whose marker exists was counted before, and is neither counted
again nor written back once removed (a satisfied requirement never comes back, whoever
writes it again); one gone already is not counted down twice. The marker stays until the
owner's rows are forgotten (a group's member row is its members' marker). Whoever takes a
bucket to zero asks, a moment later (EMPTIED_PAUSE), whether another bucket is not, as
Taskcluster's queue asks whether a group is still active when its dependency resolver gets
to the resolution: a group that a client fills one task after another is empty for a
millisecond between a completion and the next creation, and a question asked then found
it resolved, wrote and announced that, and read every bucket to know it (three storage
requests and an event per task where, a moment later, one read finds the new member's
count). A count above zero that this process wrote after the bucket went to zero answers it
with no request (the new member's, written during the pause: one read less per task of a
group filled one task after another); else the count of a bucket or two where this process
last saw rows counted is read (a count read above zero answers at once), else one query over
every bucket asks. The query is what costs: Azurite scans the whole table
for it, and a large owner in buckets of two characters (see `buckets`) empties a thousand
buckets, one every ten completions of a 10,000-task graph, which made its completions 40%
slower before the counts were read first. Two last removals in two buckets at once: each
writes its own count before it reads the others', so the later reader sees both at zero.

This process remembers each count it wrote, with its ETag (a bounded memory), and its
threads write a bucket one at a time; a transaction on a count another process changed since
is refused whole, and done again after reading the count. A bucket written by one process
(the local host, a part of a graph) costs no read.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from azure.core import MatchConditions
from azure.data.tables import TableTransactionError, UpdateMode

from shared.runtime.thread_pools import COUNTDOWN_READS, COUNTDOWN_WRITES
from shared.storage.client.lost_responses import WRITE_ID
from shared.storage.client.unique_ids import unique_id
from shared.storage.patterns.batches import MAX_BATCH, delete_row
from shared.domain.ids import SLUGID_CHARACTERS
from shared.storage.patterns.buckets import (IN_BUCKETS, WIDE, BucketTables, all_buckets, bucket, bucket_owner,
                                           bucket_range, bucket_width)
from shared.storage.errors import ChangedSinceRead, Closed
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.patterns.queries import first_rows, row_or_none
from shared.storage.client.table import Table

COUNT = "count"
CLOSED = "closed"
REMEMBERED = 8192        # counts this process remembers
PROBES = 2               # counts read (see `left`) before a query over every bucket
KNOWN = 8                # buckets last seen counting that `left` looks at (the latest learnt)
MAX_BUCKETS = len(SLUGID_CHARACTERS) ** WIDE   # count rows an owner has at most
EMPTIED_PAUSE = 0.01     # seconds between taking a bucket to zero and asking whether others are


@dataclass(frozen=True)
class _Count:
    value: int
    etag: str | None      # None: no count row in the bucket (as far as this process knows)
    closed: str = ""      # when the owner was closed to new rows (see `close`), if it was

    def counted(self, change: int, etag: str | None) -> _Count:
        return _Count(self.value + change, etag, self.closed)


class _Remembered:
    """The last count and ETag this process wrote or read per bucket (key: table, partition,
    count row): a hint only. And per owner, the buckets last seen counting a row."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: OrderedDict[tuple, tuple[_Count, int, int]] = OrderedDict()   # the count, when learnt, its request begun
        self._counting: dict[tuple, dict[str, None]] = {}   # (table, owner, row) -> partitions
        self._ticks = 0   # a clock: when each count was learnt (a write's, or a read's start)

    def get(self, key: tuple) -> _Count | None:
        with self._lock:
            found = self._counts.get(key)
            return found[0] if found else None

    def now(self) -> int:
        with self._lock:
            self._ticks += 1
            return self._ticks

    def put(self, key: tuple, count: _Count, began: int, read: bool = False) -> None:
        """Remember `count`, written or (`read`) read by a request begun at `began` (a `now`);
        not a read's if the bucket's count was learnt after the read began (a write of this
        process, a later read), which the read's answer may predate: a stale ETag has the next
        write refused."""
        with self._lock:
            found = self._counts.get(key)
            if read and found is not None and found[1] > began:
                return
            if not read:
                self._ticks += 1
            self._counts[key] = (count, began if read else self._ticks, began)
            self._counts.move_to_end(key)
            self._note(key, count.value > 0)
            while len(self._counts) > REMEMBERED:
                self._note(self._counts.popitem(last=False)[0], False)

    def counting(self, table: str, owner: str, row: str, but: str, limit: int) -> list[tuple[str, int]]:
        """Up to `limit` of `owner`'s buckets, but `but`, last seen counting a row, the latest
        learnt first, each with when the request that read or left that count began (a
        `now`). Bounded: a large owner has a thousand buckets, and walking them all after
        each emptied bucket took a ninth of the host's time while a 10,000-task graph ran."""
        with self._lock:
            found = []
            for partition in reversed(self._counting.get((table, owner, row), {})):
                if partition != but:
                    found.append((partition, self._counts[table, partition, row][2]))
                    if len(found) == limit:
                        break
            return found

    def _note(self, key: tuple, counting: bool) -> None:
        table, partition, row = key
        owner = (table, bucket_owner(partition), row)
        if counting:
            partitions = self._counting.setdefault(owner, {})
            partitions.pop(partition, None)   # the latest learnt last
            partitions[partition] = None
        elif partition in self._counting.get(owner, ()):
            del self._counting[owner][partition]
            if not self._counting[owner]:
                del self._counting[owner]


_REMEMBERED = _Remembered()
_LOCKS = [threading.Lock() for _ in range(1024)]


class Countdown:
    def __init__(self, table: Table, prefix: str, name: str, marker: str,
                 spread: BucketTables | None = None) -> None:
        self._table = table        # `spread`: where a wide owner's buckets are (see `BucketTables`)
        self._spread = spread
        self._prefix = prefix
        self._marker = marker
        self._row = "~" + name          # sorts after every task id: outside the counted rows' range

    def add(self, owner: str, task_ids: list[str], width: int = 1, refuse_closed: bool = False,
            beside: dict[str, dict] | None = None) -> set[str]:
        """Counted rows for `task_ids` in `owner`'s buckets of `width` (see `buckets`), but
        those counted before (their marker exists), which are returned; a bucket's
        transactions one after another, the buckets at once. `refuse_closed`: raise Closed,
        adding nothing more, if the owner was closed (see `close`). `beside`: a row more per
        task (RowKey and columns), written with its marker, once."""
        def bucket_of(task_id: str) -> str:
            return bucket(owner, task_id, width)
        by_bucket = [(partition, list(ids)) for partition, ids in
                     groupby(sorted(set(task_ids), key=bucket_of), key=bucket_of)]
        beside = beside or {}
        per_transaction = (MAX_BATCH - 1) // (3 if beside else 2)   # each task's rows, and the count

        def fill(partition: str, ids: list[str]) -> set[str]:
            before = set()
            for start in range(0, len(ids), per_transaction):
                with self._serial(partition):
                    before |= self._add_chunk(partition, ids[start:start + per_transaction], refuse_closed, beside)
            return before
        if len(by_bucket) == 1:
            return fill(*by_bucket[0])
        return set().union(*COUNTDOWN_WRITES.map(lambda job: fill(*job), by_bucket))

    def add_new(self, owner: str, task_id: str, operations: list[tuple], beside: dict | None = None) -> list | None:
        """Count the task's row into its bucket (of width 1) taken to have no count yet, in one
        transaction with `operations` on rows of that partition (the owner's own row, made with
        its first member); the transaction's results, or None, writing nothing, if a row it
        creates exists (the count's among them: then `add` is the way)."""
        partition = bucket(owner, task_id)
        rows = [*operations, *self._counted_rows(partition, [task_id]), *_merged(partition, beside),
                self._counting(partition, _Count(0, None), 1)]
        with self._serial(partition):
            began = _REMEMBERED.now()
            try:
                results = self._in(partition).submit_transaction(rows)
            except TableTransactionError:
                return None
            self._remember(partition, _Count(1, results[-1].get("etag")), began)
        return results

    def _add_chunk(self, partition: str, task_ids: list[str], refuse_closed: bool,
                   beside: dict[str, dict]) -> set[str]:
        """Add one transaction's worth of a bucket's rows; those counted before."""
        missing, refusals = task_ids, 0

        def write(count: _Count) -> set[str]:
            nonlocal missing, refusals
            if refuse_closed and count.closed:
                raise Closed(partition)
            if not missing:
                return set(task_ids)
            rows = self._counted_rows(partition, missing)
            rows += [("upsert", {**beside[task_id], "PartitionKey": partition}) for task_id in missing if task_id in beside]
            began = _REMEMBERED.now()
            try:
                etag = self._submit(partition, rows, count, len(missing))
            except TableTransactionError:
                fresh = self._read(partition)
                if fresh == count or refusals % 2:   # refused for a row, not (only) the count: which exist?
                    missing = [task_id for task_id, found in zip(missing, COUNTDOWN_READS.map(
                        lambda t: self._exists(partition, self._marker + t), missing)) if not found]
                refusals += 1
                raise ChangedSinceRead(partition, fresh=fresh)
            self._remember(partition, count.counted(len(missing), etag), began)
            return set(task_ids) - set(missing)
        return until_written(lambda: self._read(partition), write,
                             self._remembered(partition) or _Count(0, None), _kept_changing(partition))

    def remove(self, owner: str, task_id: str, width: int = 1, beside: dict | None = None,
               bucket_only: bool = False) -> bool:
        """Delete the task's counted row (gone already: nothing to count); whether any counted
        row of `owner` (whose buckets are of `width`) is left, in any bucket. `beside`: a row
        of the task's bucket (RowKey and columns) merged in the same transaction, only if the
        counted row was there. `bucket_only`: the caller knows no other bucket to count rows,
        so the task's bucket answers alone (no query)."""
        partition = bucket(owner, task_id, width)
        with self._serial(partition):
            left = self._remove(partition, task_id, beside)
        if left or bucket_only:
            return left
        emptied_at = _REMEMBERED.now()
        time.sleep(EMPTIED_PAUSE)
        return self.left(owner, width, emptied=partition, since=emptied_at)

    def _remove(self, partition: str, task_id: str, beside: dict | None = None) -> bool:
        """Whether the bucket counts a row after the task's is removed."""
        remembered = self._remembered(partition)

        def write(count: _Count) -> bool:
            if count.etag is None:      # no count: no counted row in the bucket
                delete_row(self._in(partition), partition, self._prefix + task_id)
                return False
            began = _REMEMBERED.now()
            try:
                etag = self._in(partition).submit_transaction([*_merged(partition, beside),
                                                                *self._removal(partition, task_id, count)])[-1].get("etag")
            except TableTransactionError:
                fresh = self._read(partition)
                if fresh == count:      # refused for the row: removed before
                    return count.value > 0
                raise ChangedSinceRead(partition, fresh=fresh)
            count = count.counted(-1, etag)
            self._remember(partition, count, began)
            return count.value > 0
        # "no count row" is believed only as read now
        return until_written(lambda: self._read(partition), write,
                             remembered if remembered and remembered.etag else None, _kept_changing(partition))

    def remove_last(self, owner: str, task_id: str, operations: list[tuple], beside: dict | None = None) -> list | None:
        """Delete the task's counted row, the last its bucket (of width 1) counts as this
        process knows it, in one transaction with `operations` on rows of that partition (the
        owner's own row, marked done with its last member); the transaction's results, or
        None, writing nothing, if the count is not known to be one or the transaction was
        refused (a row or the count changed since: then `remove` is the way)."""
        partition = bucket(owner, task_id)
        with self._serial(partition):
            count = self._remembered(partition)
            if count is None or count.etag is None or count.value != 1:
                return None
            merged, began = _merged(partition, beside), _REMEMBERED.now()
            try:
                results = self._in(partition).submit_transaction(
                    [*merged, *self._removal(partition, task_id, count), *operations])
            except TableTransactionError:
                return None
            self._remember(partition, count.counted(-1, results[len(merged) + 1].get("etag")), began)
        return results

    def remove_with(self, other: Countdown, owner: str, task_id: str, width: int = 1,
                    beside: dict | None = None) -> tuple[bool, bool]:
        """`remove` the task's rows of this countdown and of `other`, whose rows are in the
        same table and buckets (a graph's open labels beside its group's unresolved members):
        one transaction for both when this process knows both counts, else one after the
        other. Whether each has a counted row of `owner` left. `beside`: as for `remove`,
        with this countdown's row."""
        partition = bucket(owner, task_id, width)
        with self._serial(partition):   # the table's and bucket's lock: `other`'s too
            mine, theirs = self._remembered(partition), other._remembered(partition)
            if mine and mine.etag and theirs and theirs.etag:
                merged, began = _merged(partition, beside), _REMEMBERED.now()
                try:
                    results = self._in(partition).submit_transaction([*merged, *self._removal(partition, task_id, mine),
                                                   *other._removal(partition, task_id, theirs)])
                except TableTransactionError:   # a count changed, or a row went before: one at a time
                    left = self._remove(partition, task_id, beside), other._remove(partition, task_id)
                else:
                    self._remember(partition, mine.counted(-1, results[len(merged) + 1].get("etag")), began)
                    other._remember(partition, theirs.counted(-1, results[-1].get("etag")), began)
                    left = mine.value > 1, theirs.value > 1
            else:
                left = self._remove(partition, task_id, beside), other._remove(partition, task_id)
        if all(left):
            return left
        emptied_at = _REMEMBERED.now()
        time.sleep(EMPTIED_PAUSE)
        return (left[0] or self.left(owner, width, emptied=partition, since=emptied_at),
                left[1] or other.left(owner, width, emptied=partition, since=emptied_at))

    def close(self, owner: str, when: str, width: int = 1) -> None:
        """Mark every bucket of `width` the owner's rows may ever use as closed at `when` (an upsert of
        each count row, made if missing): an `add` refusing closed owners that began before
        is refused by the count's changed ETag, or by the row it would have made, and reads
        the mark. Done again, it changes nothing but the ETags. It writes a `writeId` of its
        own, as every writer of a count does (see `lost_responses`)."""
        list(COUNTDOWN_READS.map(lambda partition: self._in(partition).upsert_entity(
            {"PartitionKey": partition, "RowKey": self._row, CLOSED: when, WRITE_ID: unique_id()},
            mode=UpdateMode.MERGE), all_buckets(owner, width)))

    def left(self, owner: str, width: int = 1, emptied: str = "", since: int | None = None) -> bool:
        """Whether any bucket of `owner` (of `width`) counts a row after `since` (a `now` taken
        once `emptied` was taken to zero; by default, now). A count read above zero is a row
        there now, whoever removes it next (and that remover, taking it to zero, will find this
        bucket's count at zero or later: so a group is never left unresolved by two removers
        each seeing the other's row); only the query can say there is none. So this process's
        own request begun after `since` that left or read a count above zero answers with no
        request (a client filling a group one task after another: the next member's membership
        written while this completion paused); else a bucket this process last saw counting
        one is read, PROBES of them at most, then the query."""
        since = _REMEMBERED.now() if since is None else since
        known = _REMEMBERED.counting(self._table.table_name, owner, self._row, emptied, KNOWN)
        if any(began > since for _, began in known):
            return True
        for partition, _ in known[:PROBES]:
            if self._read(partition).value > 0:
                return True
        query, parameters = IN_BUCKETS + " and RowKey eq @row and count gt 0", {**bucket_range(owner), "row": self._row}
        if self._spread is None:
            return bool(first_rows(self._table, query, parameters, 1, ["RowKey"]))
        return bool(self._spread.query(width, query, parameters, 1, ["RowKey"]))

    def totals(self, owner: str, width: int = 1) -> tuple[int, datetime | None]:
        """How many counted rows `owner` has over all its buckets, and when storage last
        changed one of its counts (None: no count row): one query of the count rows alone,
        for a watcher that must not read the counted rows themselves (see `watchdog`)."""
        query, parameters = IN_BUCKETS + " and RowKey eq @row", {**bucket_range(owner), "row": self._row}
        select = ["PartitionKey", "RowKey", "Timestamp", COUNT]
        rows = (first_rows(self._table, query, parameters, MAX_BUCKETS, select) if self._spread is None
                else self._spread.query(width, query, parameters, MAX_BUCKETS, select))
        return _totals(rows)

    def bucket_totals(self, owner: str, task_id: str) -> tuple[int, datetime | None]:
        """`totals` of an owner whose counted rows are all in the task's bucket of width 1
        (a group made for one task): one point read of that bucket's count, which Azurite
        answers without the scan of its table that any query costs."""
        partition = bucket(owner, task_id)
        row = row_or_none(self._in(partition), partition, self._row)
        return _totals([row] if row is not None else [])

    def _submit(self, partition: str, operations: list[tuple], count: _Count, change: int) -> str | None:
        """Send `operations` with the count's change, conditional on it being `count`; the new ETag."""
        return self._in(partition).submit_transaction([*operations, self._counting(partition, count, change)])[-1].get("etag")

    def _counting(self, partition: str, count: _Count, change: int) -> tuple:
        """The operation that changes the bucket's count by `change`, if it is still `count`."""
        row = {"PartitionKey": partition, "RowKey": self._row, COUNT: count.value + change}
        if count.etag is None:
            return "create", row
        return "update", row, {"mode": UpdateMode.MERGE, "etag": count.etag,
                               "match_condition": MatchConditions.IfNotModified}

    def _counted_rows(self, partition: str, task_ids: list[str]) -> list[tuple]:
        """The operations that create the tasks' markers and counted rows."""
        return [("create", {"PartitionKey": partition, "RowKey": key + task_id})
                for task_id in task_ids for key in (self._marker, self._prefix)]

    def _removal(self, partition: str, task_id: str, count: _Count) -> list[tuple]:
        """The operations that delete the task's counted row and count it down from `count`."""
        return [("delete", {"PartitionKey": partition, "RowKey": self._prefix + task_id}),
                self._counting(partition, count, -1)]

    def _read(self, partition: str) -> _Count:
        began = _REMEMBERED.now()
        row = row_or_none(self._in(partition), partition, self._row)
        count = _Count(0, None) if row is None else _Count(row.get(COUNT) or 0, row.metadata.get("etag"),
                                                           row.get(CLOSED) or "")
        self._remember(partition, count, began, read=True)
        return count

    def _exists(self, partition: str, row_key: str) -> bool:
        return row_or_none(self._in(partition), partition, row_key, select=["RowKey"]) is not None

    def _in(self, partition: str) -> Table:
        """The table of a bucket."""
        return self._table if self._spread is None else self._spread.of(partition, bucket_width(partition))

    def _serial(self, partition: str) -> threading.Lock:
        """The lock of this process's writers of the bucket: they take turns instead of
        refusing each other's transactions (16 threads removing rows of 32 buckets at once
        saw a third of their transactions refused)."""
        return _LOCKS[hash((self._table.table_name, partition)) % len(_LOCKS)]

    def _remembered(self, partition: str) -> _Count | None:
        return _REMEMBERED.get((self._table.table_name, partition, self._row))

    def _remember(self, partition: str, count: _Count, began: int, read: bool = False) -> None:
        _REMEMBERED.put((self._table.table_name, partition, self._row), count, began, read)


def _merged(partition: str, beside: dict | None) -> list[tuple]:
    """The operation that merges `beside` (RowKey and columns) into the bucket, if given."""
    return [("upsert", {**beside, "PartitionKey": partition})] if beside else []


def _kept_changing(partition: str):
    def gave_up():
        raise RuntimeError(f"the count of {partition} kept changing: its transactions were refused again and again")
    return gave_up


def _totals(count_rows) -> tuple[int, datetime | None]:
    """The counts of `count_rows` summed, and the latest time storage changed one (None: none)."""
    stamps = [row.metadata.get("timestamp") for row in count_rows]
    return sum(row.get(COUNT) or 0 for row in count_rows), max((stamp for stamp in stamps if stamp), default=None)
