"""The time index reads only what is due, and its cursor never skips rows not yet due."""

from datetime import datetime, timedelta, timezone

from shared.domain.timestamps import to_iso
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.time_index import SPREAD, TOGETHER, TimeIndex
from tests.conftest import unique_prefix

NOON = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)


def index(azurite, bucket: timedelta) -> TimeIndex:
    return TimeIndex(StorageAccount(azurite.connection_string, unique_prefix()), "test", bucket)


def test_only_due_items_are_returned_oldest_first(azurite):
    times = index(azurite, timedelta(minutes=1))
    times.add([(to_iso(NOON + timedelta(minutes=m)), f"item{m}") for m in (3, 0, 1, 30)])
    assert [item.key for item in times.due(NOON + timedelta(minutes=2), 10)] == ["item0", "item1"]
    assert [item.key for item in times.due(NOON + timedelta(minutes=2), 1)] == ["item0"]


def test_a_day_bucket_keeps_its_cursor_until_the_whole_day_is_past(azurite):
    days = index(azurite, timedelta(days=1))
    evening = NOON + timedelta(hours=8)
    days.add([(to_iso(evening), "evening")])
    assert days.due(NOON + timedelta(hours=1), 10) == []          # the sweep at 13:00 must not move past today
    assert [item.key for item in days.due(evening, 10)] == ["evening"]


def test_removed_items_are_not_returned_again(azurite):
    times = index(azurite, timedelta(minutes=1))
    times.add([(to_iso(NOON), "once")])
    [item] = times.due(NOON, 10)
    times.remove([item])
    times.remove([item])                                             # a second sweeper's remove is harmless
    assert times.due(NOON + timedelta(hours=1), 10) == []


def test_items_due_at_one_time_are_spread_over_partitions_and_all_come_due(azurite):
    times = index(azurite, timedelta(minutes=1))
    writes = [[f"task{part:02d}-{i:03d}" for i in range(100)] for part in range(40)]   # a graph's parts
    for keys in writes:
        times.add([(to_iso(NOON), key) for key in keys])                # a graph's tasks share a deadline
    keys = sorted(key for write in writes for key in write)
    rows = list(times._table.query_entities(   # noqa: SLF001
        "PartitionKey gt @low and PartitionKey lt @high", parameters={"low": "test.", "high": "test/"}))
    partition_of = {row["key"]: row["PartitionKey"] for row in rows}
    assert all(len({partition_of[key] for key in write}) == 1 for write in writes)   # a transaction per 100
    assert len(set(partition_of.values())) >= SPREAD // 2                # none holds them all
    due = times.due(NOON, 5000)
    assert sorted(item.key for item in due) == keys
    times.put(to_iso(NOON), "progress", "page 3")
    assert times.get(to_iso(NOON), "progress") == "page 3"
    times.remove(due)
    assert [item.key for item in times.due(NOON, 500)] == ["progress"]


def test_items_written_alone_or_due_apart_share_their_bucket_s_first_partition(azurite):
    """A sweep deletes what it handled in a transaction per partition: tasks created one by
    one cost it one transaction per 100, not one per partition they were hashed to, and so
    do their expiries, which a sweep writes a batch at a time."""
    times = index(azurite, timedelta(minutes=1))
    keys = [f"task{i:03d}" for i in range(40)]
    for key in keys:
        times.add([(to_iso(NOON), key)])
    times.add([(to_iso(NOON + timedelta(seconds=second)), f"few{second}") for second in range(TOGETHER)])
    times.add([(to_iso(NOON + timedelta(seconds=second / 10)), f"apart{second}") for second in range(100)])
    partitions = {row["PartitionKey"] for row in times._table.query_entities(   # noqa: SLF001
        "PartitionKey gt @low and PartitionKey lt @high", parameters={"low": "test.", "high": "test/"})}
    assert partitions == {"test.20260501T1200.00"}
    due = times.due(NOON + timedelta(minutes=1), 500)
    assert len(due) == 40 + TOGETHER + 100
    times.remove(due)
    assert times.due(NOON + timedelta(minutes=1), 500) == []



def test_an_item_given_twice_in_one_write_is_indexed_once(azurite):
    """The same (due, key) twice in one write of many due at that time (a deadline sweep
    that met a task through two items of its group and second) is one row: a transaction
    holding a RowKey twice is refused whole, and the sweep that wrote it failed again on
    every later run."""
    times = index(azurite, timedelta(minutes=1))
    keys = [f"task{i:03d}" for i in range(60)]
    times.add([(to_iso(NOON), key) for key in keys + keys[:3]], {"task000": "noted"})
    due = times.due(NOON, 500)
    assert sorted(item.key for item in due) == keys
    assert {item.key: item.value for item in due}["task000"] == "noted"
