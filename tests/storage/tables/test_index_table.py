"""The Index table on Azurite (and on the in-memory account the service tests use): the rank
rule under concurrent writers, namespaces created and extended, and listings that read one
partition's key range a page at a time."""

from __future__ import annotations

import threading

import pytest

from shared.domain.index import IndexEntry
from shared.storage.client.account import OPERATIONS, StorageAccount
from shared.storage.tables.index_table import IndexTable
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

TASKS = ["fN1SbArXTPSVFNUvaOlinQ", "Xv2nEkA9RvyXDCNKr6p3Wg", "BLv1ZiFETWq3ifKn8xt6Cw", "aV3lD7GTQZaUh4xhR4FjFA"]
LATER = "2031-01-01T00:00:00.000Z"


@pytest.fixture(params=["azurite", "memory"])
def index(request) -> IndexTable:
    if request.param == "memory":
        return IndexTable(MemoryAccount(unique_prefix()))
    return IndexTable(StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix()))


def entry(namespace: str, task: int = 0, rank: float = 0, expires: str = LATER, **data) -> IndexEntry:
    return IndexEntry(namespace, TASKS[task], rank, data, expires)


def test_an_entry_is_found_at_its_path_as_inserted(index):
    stored = index.insert(entry("app.rev.build", rank=12.5, rev="abc"))
    assert stored.to_json() == {"namespace": "app.rev.build", "taskId": TASKS[0], "rank": 12.5,
                                "data": {"rev": "abc"}, "expires": LATER}
    assert index.get("app.rev.build") == stored and index.get("app.rev") is None and index.get("other") is None


def test_a_lower_rank_does_not_replace_a_higher_one(index):
    index.insert(entry("app.latest", task=0, rank=5))
    assert index.insert(entry("app.latest", task=1, rank=4)).task_id == TASKS[0]     # refused: the stored one
    assert index.get("app.latest").task_id == TASKS[0]
    assert index.insert(entry("app.latest", task=2, rank=5)).task_id == TASKS[2]     # equal: the newer wins
    assert index.insert(entry("app.latest", task=3, rank=9, note="x")).data == {"note": "x"}
    assert (index.get("app.latest").task_id, index.get("app.latest").rank) == (TASKS[3], 9)


def test_concurrent_indexers_leave_the_highest_rank(index):
    barrier = threading.Barrier(4)

    def insert(number: int) -> None:
        barrier.wait()
        for rank in range(number, 12, 4):
            index.insert(entry("race.latest", task=number, rank=rank))
    threads = [threading.Thread(target=insert, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = index.get("race.latest")
    assert (stored.rank, stored.task_id) == (11, TASKS[3])


def test_inserting_makes_every_namespace_above_and_extends_their_expiry(index):
    index.insert(entry("a.b.c.d", expires="2030-05-06T07:00:00.000Z"))
    assert [ns.to_json() for ns in index.namespaces("", "", 10)[0]] == [
        {"namespace": "a", "name": "a", "expires": "2030-05-07T00:00:00.000Z"}]
    assert [ns.namespace for ns in index.namespaces("a.b", "", 10)[0]] == ["a.b.c"]
    index.insert(entry("a.b.x", expires="2030-01-01T00:00:00.000Z"))            # earlier: nothing shrinks
    assert index.namespace("a").expires == "2030-05-07T00:00:00.000Z"
    index.insert(entry("a.b.c.e", expires="2032-02-02T02:00:00.000Z"))
    assert {index.namespace(path).expires for path in ("a", "a.b", "a.b.c")} == {"2032-02-03T00:00:00.000Z"}
    assert index.namespace("a.b.c.d") is None                                   # a task, not a namespace


def test_a_path_can_hold_tasks_and_be_a_task(index):
    index.insert(entry("a.b", task=0))
    index.insert(entry("a.b.c", task=1))
    assert [found.namespace for found in index.tasks("a", "", 10)[0]] == ["a.b"]
    assert [found.namespace for found in index.namespaces("a", "", 10)[0]] == ["a.b"]
    assert [found.namespace for found in index.tasks("a.b", "", 10)[0]] == ["a.b.c"]
    assert index.tasks("", "", 10) == ([], None) and index.tasks("nowhere", "", 10) == ([], None)


def test_listings_are_paged_in_name_order_and_read_only_their_partition(index):
    for number in range(7):
        index.insert(entry(f"big.ns{number}.task"))
        index.insert(entry(f"big.t{number}"))
    index.insert(entry("bigger.t0"))                    # a neighbour partition, never read
    names, after, pages = [], "", 0
    while True:
        before = OPERATIONS.value
        page, after = index.namespaces("big", after, 3)
        assert OPERATIONS.value - before == 1          # one query of one key range
        names += [found.name for found in page]
        pages += 1
        if after is None:
            break
    assert names == [f"ns{number}" for number in range(7)] and pages == 3
    first, after = index.tasks("big", "", 4)
    rest, end = index.tasks("big", after, 4)
    assert [found.namespace for found in first + rest] == [f"big.t{number}" for number in range(7)] and end is None


def test_names_with_characters_azure_forbids_in_keys_and_very_long_ones(index):
    odd = "pct%2Fslash.x!~*'()-_"
    long = "%" * 200 + ".m" + "%" * 50                  # a parent escaped beyond the key limit: hashed
    for path in (odd, long):
        index.insert(entry(path, rank=1))
        assert index.get(path).namespace == path
    assert [found.namespace for found in index.tasks("pct%2Fslash", "", 5)[0]] == [odd]
    assert [found.namespace for found in index.tasks("%" * 200, "", 5)[0]] == [long]
    assert [found.namespace for found in index.namespaces("", "", 5)[0]] == ["%" * 200, "pct%2Fslash"]


def test_a_deleted_task_is_gone_and_its_namespaces_stay(index):
    index.insert(entry("a.b.c", rank=9))
    index.delete("a.b.c")
    index.delete("a.b.c")                               # twice: no error
    assert index.get("a.b.c") is None and index.namespace("a.b").namespace == "a.b"
    assert index.insert(entry("a.b.c", task=1, rank=0)).task_id == TASKS[1]   # the old rank went with it
