"""Concurrent identical reads share one round trip, and each asker still gets a read that
began after it asked."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.domain.ids import new_slugid
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.queries import any_row
from shared.storage.patterns.shared_reads import SharedReads
from tests.conftest import unique_prefix
from tests.storage.client.counted_table import CountedQueries


class Store:
    """A value that askers change before they ask, and a slow read that reports the value it
    saw when it began and how many reads of it ran at once."""

    def __init__(self, pause: float = 0.02) -> None:
        self.pause = pause
        self.version = 0
        self.reads = 0
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def write(self) -> int:
        with self.lock:
            self.version += 1
            return self.version

    def read(self) -> int:
        with self.lock:
            self.reads += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            seen = self.version
        time.sleep(self.pause)
        with self.lock:
            self.running -= 1
        return seen


def test_many_askers_share_few_reads_and_each_sees_its_own_write():
    reads, store = SharedReads(), Store()

    def ask(_) -> tuple[int, int]:
        written = store.write()
        return written, reads.read("key", store.read)
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(ask, range(200)))
    assert all(seen >= written for written, seen in answers)
    assert store.most_at_once == 1
    assert store.reads < 100   # 200 askers; about one read per pause while they keep coming


def test_an_asker_during_a_read_gets_the_next_read_not_that_one():
    reads, store = SharedReads(), Store(pause=0.2)
    first = threading.Thread(target=reads.read, args=("key", store.read))
    first.start()
    time.sleep(0.05)   # the first read is under way, and saw version 0
    written = store.write()
    assert reads.read("key", store.read) == written
    first.join()
    assert store.reads == 2


def test_different_keys_are_read_at_the_same_time():
    reads, store = SharedReads(), Store(pause=0.1)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda key: reads.read(key, store.read), ["a", "b", "c", "d"]))
    assert store.most_at_once == 4


def test_a_failed_read_fails_its_askers_and_the_next_read_starts_afresh():
    reads, started = SharedReads(), threading.Event()
    release = threading.Event()

    def failing():
        started.set()
        release.wait(5)
        raise ConnectionError("storage went away")
    with ThreadPoolExecutor(3) as pool:
        leader = pool.submit(reads.read, "key", failing)
        started.wait(5)
        joiners = [pool.submit(reads.read, "key", lambda: "never read: a read is waiting already")
                   for _ in range(2)]
        time.sleep(0.05)
        release.set()
        with pytest.raises(ConnectionError):
            leader.result(5)
        # The joiners asked during the failed read: they share the read after it.
        assert [joiner.result(5) for joiner in joiners] == ["never read: a read is waiting already"] * 2
    assert reads.read("key", lambda: "fresh") == "fresh"


def test_concurrent_identical_queries_cost_fewer_round_trips(azurite):
    """Through the real table client: 16 threads asking Azurite whether a partition has a
    row share reads, and every answer follows the writes made before it was asked."""
    table = CountedQueries(StorageAccount(azurite.connection_string, unique_prefix()).table("Rows"))
    partition = new_slugid()
    table.upsert_entity({"PartitionKey": partition, "RowKey": "x"})
    query, parameters = "PartitionKey eq @pk", {"pk": partition}
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: any_row(table, query, parameters), range(64)))
    assert answers == [True] * 64
    assert 1 <= table.queries < 64
    table.delete_entity(partition, "x")
    assert not any_row(table, query, parameters)

