"""Counted rows per bucket: "is any left?" answered by the count a removal leaves, exact
however often rows are added or removed again, by however many writers, with whatever this
process remembers of the counts; a row counted once is never written back."""

import threading
import time

import pytest

from shared.domain.ids import new_slugid
from shared.storage.patterns import countdown
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.buckets import bucket
from shared.storage.patterns.countdown import Countdown
from shared.storage.errors import Closed
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount
from tests.storage.client.counted_table import CountedQueries


@pytest.fixture(params=["azurite", "memory"])
def table(request):
    if request.param == "memory":
        return MemoryAccount(unique_prefix()).table("Counted")
    return StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix()).table("Counted")


def counts(table, owner: str) -> dict[str, int]:
    return {row["PartitionKey"]: row["count"] for row in table.query_entities(
        "PartitionKey gt @low and PartitionKey lt @high and RowKey eq '~left'",
        parameters={"low": owner + "~", "high": owner + "~~"})}


def counted_rows(table, owner: str) -> dict[str, int]:
    rows = table.query_entities("PartitionKey gt @low and PartitionKey lt @high and RowKey gt 'x.' and RowKey lt 'x/'",
                                parameters={"low": owner + "~", "high": owner + "~~"}, select=["PartitionKey"])
    found: dict[str, int] = {}
    for row in rows:
        found[row["PartitionKey"]] = found.get(row["PartitionKey"], 0) + 1
    return found


def test_the_last_removal_finds_none_left_and_adding_or_removing_again_counts_once(table):
    left, owner = Countdown(table, "x.", "left", marker="m."), new_slugid()
    task_ids = [new_slugid() for _ in range(300)]
    left.add(owner, task_ids)
    left.add(owner, task_ids[:150])                      # again: already counted
    assert counts(table, owner) == counted_rows(table, owner) and sum(counts(table, owner).values()) == 300
    assert len(list(table.query_entities("RowKey gt 'm.' and RowKey lt 'm/'", select=["RowKey"]))) == 300
    answers = [left.remove(owner, task_id) for task_id in task_ids[:-1]]
    assert all(answers) and left.left(owner)
    assert left.remove(owner, task_ids[0])               # removed before: nothing counted down
    left.add(owner, task_ids[:1])                        # counted once: never written back
    assert sum(counts(table, owner).values()) == 1 == sum(counted_rows(table, owner).values())
    assert not left.remove(owner, task_ids[-1]) and not left.left(owner)
    assert not left.remove(owner, task_ids[-1])
    assert set(counts(table, owner).values()) == {0} and counted_rows(table, owner) == {}


def test_counts_stay_exact_when_what_this_process_remembers_is_stale(table):
    """Another process wrote the bucket since: the transaction on the remembered count is
    refused whole and done again after reading it."""
    left, owner = Countdown(table, "x.", "left", marker="m."), new_slugid()
    first, second, third = (new_slugid() for _ in range(3))
    one_bucket = [first[0] + rest[1:] for rest in (first, second, third)]   # all in first's bucket
    left.add(owner, one_bucket[:2])
    key = (table.table_name, bucket(owner, first), "~left")
    remembered = countdown._REMEMBERED.get(key)
    left.add(owner, one_bucket[2:])                      # "another process"
    countdown._REMEMBERED.put(key, remembered, countdown._REMEMBERED.now())
    assert left.remove(owner, one_bucket[0])             # refused, read, done again: 2 left
    countdown._REMEMBERED.put(key, remembered, countdown._REMEMBERED.now())
    left.add(owner, [*one_bucket, fourth := first[0] + new_slugid()[1:]])   # counts the new one only
    assert counts(table, owner) == {bucket(owner, first): 3} == counted_rows(table, owner)
    assert fourth in {row["RowKey"][2:] for row in table.query_entities("PartitionKey eq @pk and RowKey gt 'x.'",
                                                                         parameters={"pk": bucket(owner, first)})}


def test_a_read_answered_after_a_write_of_this_process_does_not_replace_what_the_write_left(table):
    """A probe of a bucket (`left`) runs beside the bucket's writers: its answer, begun before
    a write, would leave a stale ETag that has the next write refused and done again."""
    left, owner = Countdown(table, "x.", "left", marker="m."), new_slugid()
    task = new_slugid()
    left.add(owner, [task])
    key = (table.table_name, bucket(owner, task), "~left")
    began, before = countdown._REMEMBERED.now(), countdown._REMEMBERED.get(key)   # a read begins...
    left.add(owner, [task[0] + new_slugid()[1:]])                                  # a write meanwhile...
    written = countdown._REMEMBERED.get(key)
    countdown._REMEMBERED.put(key, before, began, read=True)                       # ...the read answers
    assert countdown._REMEMBERED.get(key) == written and written.value == 2
    countdown._REMEMBERED.put(key, before, countdown._REMEMBERED.now(), read=True)   # one begun after: kept
    assert countdown._REMEMBERED.get(key) == before


def test_a_removal_reads_no_count_it_wrote_itself_and_asks_every_bucket_only_when_none_it_knows_counts(table):
    counted = CountedQueries(table)
    left, owner = Countdown(counted, "x.", "left", marker="m."), new_slugid()
    task_ids = [first + new_slugid()[1:] for first in "ABCDEA"]   # five buckets, two tasks in the first
    left.add(owner, task_ids)
    assert left.remove(owner, task_ids[-1]) and counted.queries == 0   # its bucket has a row left
    assert left.remove(owner, task_ids[0]) and counted.queries == 0    # its bucket empty: another's count read
    assert all(left.remove(owner, task_id) for task_id in task_ids[1:4]) and counted.queries == 0
    assert not left.remove(owner, task_ids[4]) and counted.queries == 1   # no count known above zero: asked


class CountedReads(CountedQueries):
    def __init__(self, table) -> None:
        super().__init__(table)
        self.reads = 0

    def get_entity(self, *args, **kwargs):
        self.reads += 1
        return self.table.get_entity(*args, **kwargs)


def test_a_count_this_process_left_above_zero_after_a_bucket_emptied_answers_with_no_request(table):
    """A client filling a group one task after another: the next member's count is written while
    the completion before it pauses. Its remover will find the emptied bucket at zero, so this
    process's own write, begun after the emptying, says a row is left as a read would have;
    a count it learnt before the emptying is read again."""
    counted = CountedReads(table)
    left, owner = Countdown(counted, "x.", "left", marker="m."), new_slugid()
    done, before, after = "A" + new_slugid()[1:], "B" + new_slugid()[1:], "C" + new_slugid()[1:]
    left.add(owner, [done, before])
    assert left.remove(owner, done)                      # B's count read: above zero
    reads = counted.reads
    left.add(owner, [done[0] + new_slugid()[1:]])
    emptied = bucket(owner, done)
    left.remove(owner, before, bucket_only=True)         # B empty; A counts one, written before
    since = countdown._REMEMBERED.now()                  # "C" is emptied now, say
    assert left.left(owner, emptied=bucket(owner, after), since=since)
    assert counted.reads == reads + 1 and counted.queries == 0     # A's count, learnt before: read
    since = countdown._REMEMBERED.now()
    left.add(owner, [after])                             # begun after `since`: no request
    assert left.left(owner, emptied=emptied, since=since) and counted.reads == reads + 1
    assert counted.queries == 0


def test_after_a_bucket_emptied_only_the_buckets_latest_seen_counting_are_looked_at(table):
    """A large owner has a thousand buckets counting: an emptied bucket's question looks at
    the few this process learnt of last (a count written after the emptying is among them),
    not at every one it remembers."""
    counted = CountedReads(table)
    left, owner = Countdown(counted, "x.", "left", marker="m."), new_slugid()
    task_ids = [first + second + new_slugid()[2:] for first in "ABCDEFGH" for second in "abcd"]
    left.add(owner, task_ids, width=2)                 # 32 buckets counting one row each (at once)
    known = countdown._REMEMBERED.counting(table.table_name, owner, "~left", "", countdown.KNOWN)
    assert len(known) == countdown.KNOWN
    assert {partition for partition, _ in known} < {bucket(owner, task_id, 2) for task_id in task_ids}
    since = countdown._REMEMBERED.now()
    later = "Aa" + new_slugid()[2:]
    left.add(owner, [later], width=2)                  # the first bucket, learnt again: latest
    known = countdown._REMEMBERED.counting(table.table_name, owner, "~left", "", countdown.KNOWN)
    assert known[0][0] == bucket(owner, later, 2) and known[0][1] > since
    reads = counted.reads
    assert left.left(owner, 2, emptied=bucket(owner, task_ids[-1], 2), since=since)
    assert counted.reads == reads and counted.queries == 0


def test_a_count_another_process_took_to_zero_is_read_again_and_the_query_decides(table):
    counted = CountedQueries(table)
    left, owner = Countdown(counted, "x.", "left", marker="m."), new_slugid()
    mine, theirs = "A" + new_slugid()[1:], "B" + new_slugid()[1:]
    left.add(owner, [mine, theirs])
    partition = bucket(owner, theirs)   # "another process" removes its task: this one still remembers 1
    table.submit_transaction([("delete", {"PartitionKey": partition, "RowKey": "x." + theirs}),
                              ("upsert", {"PartitionKey": partition, "RowKey": "~left", "count": 0})])
    assert not left.remove(owner, mine) and counted.queries == 1


def test_concurrent_writers_of_one_bucket_lose_no_count(table):
    left, owner = Countdown(table, "x.", "left", marker="m."), new_slugid()
    prefix = new_slugid()[0]
    task_ids = [prefix + new_slugid()[1:] for _ in range(48)]
    left.add(owner, task_ids[:24])
    found_none_left = []

    def work(number: int) -> None:
        left.add(owner, task_ids[24 + number * 3:24 + number * 3 + 3])
        for task_id in task_ids[number * 3:number * 3 + 3]:
            if not left.remove(owner, task_id):
                found_none_left.append(task_id)
    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts(table, owner) == {bucket(owner, task_ids[0]): 24} == counted_rows(table, owner)
    assert found_none_left == []
    for task_id in task_ids[24:]:
        left.remove(owner, task_id)
    assert not left.left(owner)


def test_two_countdowns_of_one_bucket_remove_a_task_in_one_transaction_and_stay_exact(table, monkeypatch):
    """A graph's open label beside its group's unresolved member: one transaction for both
    when this process knows both counts; with a stale count, or a row removed before, one at
    a time, and exact still."""
    members, labels = Countdown(table, "x.", "left", marker="m."), Countdown(table, "o.", "open", marker="l.")
    owner, first = new_slugid(), new_slugid()
    task_ids = [first[0] + new_slugid()[1:] for _ in range(3)]   # one bucket
    members.add(owner, task_ids)
    labels.add(owner, task_ids)
    sent, real = [], table.submit_transaction
    monkeypatch.setattr(table, "submit_transaction", lambda operations: sent.append(len(operations))
                        or real(operations))
    assert members.remove_with(labels, owner, task_ids[0]) == (True, True) and sent == [4]
    key = (table.table_name, bucket(owner, first), "~open")
    remembered = countdown._REMEMBERED.get(key)
    labels.remove(owner, task_ids[1])                    # "another process" closed the label
    countdown._REMEMBERED.put(key, remembered, countdown._REMEMBERED.now())
    assert members.remove_with(labels, owner, task_ids[1]) == (True, True)
    assert members.remove_with(labels, owner, task_ids[2]) == (False, False)
    assert members.remove_with(labels, owner, task_ids[2]) == (False, False)   # again: nothing counted twice
    open_count = table.get_entity(bucket(owner, first), "~open")["count"]
    assert (counts(table, owner), open_count, counted_rows(table, owner)) == ({bucket(owner, first): 0}, 0, {})


def test_a_closed_owner_refuses_new_rows_whatever_this_process_remembers(table):
    """A sealed group's buckets: the close changes every count row (or makes it), so an add
    from a count remembered before is refused, and so is one into a bucket never used."""
    left, owner, first = Countdown(table, "x.", "left", marker="m."), new_slugid(), new_slugid()
    left.add(owner, [first])                                 # a count this process remembers
    left.close(owner, "2026-01-01T00:00:00.000Z")
    same_bucket = first[0] + new_slugid()[1:]
    other_bucket = next(c for c in "ABCDEFGH" if c != first[0]) + new_slugid()[1:]
    for task_id in (same_bucket, other_bucket):
        with pytest.raises(Closed):
            left.add(owner, [task_id], refuse_closed=True)
    assert sum(counted_rows(table, owner).values()) == 1
    left.add(owner, [same_bucket, other_bucket])             # rows accepted before the close still come in
    assert sum(counted_rows(table, owner).values()) == 3
    assert left.remove(owner, first) and left.remove(owner, same_bucket)
    assert not left.remove(owner, other_bucket) and not left.left(owner)


def test_totals_read_the_count_rows_alone_and_say_when_one_last_changed(table):
    """What the watchdog asks of a group at each look: how many are left over all buckets, and
    when storage last changed a count (a removal moves it, as an addition does)."""
    counted = CountedQueries(table)
    left, owner = Countdown(counted, "x.", "left", marker="m."), new_slugid()
    assert left.totals(owner) == (0, None)
    task_ids = [first + new_slugid()[1:] for first in "ABCA"]
    left.add(owner, task_ids)
    queries = counted.queries
    total, added = left.totals(owner)
    assert total == 4 and added is not None and counted.queries == queries + 1
    time.sleep(0.05)
    left.remove(owner, task_ids[1])
    total, removed = left.totals(owner)
    assert total == 3 and removed > added
    assert left.totals(new_slugid()) == (0, None)       # another owner's counts are not read


def test_a_first_row_and_a_last_one_go_in_one_transaction_with_the_owners_own_row_or_not_at_all(table):
    """`add_new` counts a task into a bucket with no count, with another row of that partition;
    `remove_last` counts the only one out with a change to that row. Each writes nothing when
    a row it creates exists, or when the count is not what this process knows."""
    left, owner = Countdown(table, "x.", "left", marker="m."), new_slugid()
    partition = bucket(owner, owner)
    own = {"PartitionKey": partition, "RowKey": "own", "state": "new"}
    assert left.add_new(owner, owner, [("create", own)]) is not None
    assert counts(table, owner) == {partition: 1} == counted_rows(table, owner)
    assert left.add_new(owner, owner, [("create", {**own, "RowKey": "other"})]) is None   # counted already
    assert {row["RowKey"] for row in table.query_entities("PartitionKey eq @p", parameters={"p": partition})} == \
        {"own", "m." + owner, "x." + owner, "~left"}
    etag = table.get_entity(partition, "own").metadata["etag"]
    changed = ("update", {**own, "state": "done"}, {"mode": countdown.UpdateMode.MERGE, "etag": etag,
                                                    "match_condition": countdown.MatchConditions.IfNotModified})
    table.upsert_entity({**own, "state": "changed elsewhere"})                 # the row's version moved on
    assert left.remove_last(owner, owner, [changed]) is None
    assert counted_rows(table, owner) == {partition: 1}
    etag = table.get_entity(partition, "own").metadata["etag"]
    assert left.remove_last(owner, owner, [(changed[0], changed[1], {**changed[2], "etag": etag})]) is not None
    assert counts(table, owner) == {partition: 0} and counted_rows(table, owner) == {}
    assert table.get_entity(partition, "own")["state"] == "done"
    assert left.remove_last(owner, owner, []) is None                          # none left to count out
