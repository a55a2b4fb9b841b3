"""Concurrent upserts of one partition share a transaction, and each writer returns only
once its own rows are stored."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.data.tables import TableTransactionError

from shared.domain.ids import new_slugid
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import upsert_in_batches
from shared.storage.patterns.shared_writes import MAX_ROWS, SharedWrites
from tests.conftest import unique_prefix


class Storage:
    """Rows by (partition, row key), written by a slow `send` that records each request."""

    def __init__(self, pause: float = 0.02) -> None:
        self.pause = pause
        self.rows: dict[tuple, dict] = {}
        self.requests: list[list[dict]] = []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def send(self, table, rows: list[dict]) -> None:
        with self.lock:
            self.requests.append(rows)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        time.sleep(self.pause)
        for row in rows:
            if row.get("bad"):
                with self.lock:
                    self.running -= 1
                raise TableTransactionError(message="0:refused") if len(rows) > 1 else ValueError("bad row")
        with self.lock:
            for row in rows:
                key = (row["PartitionKey"], row["RowKey"])
                self.rows[key] = {**self.rows.get(key, {}), **row}
            self.running -= 1

    def stored(self, row: dict) -> bool:
        return self.rows.get((row["PartitionKey"], row["RowKey"])) == row


def test_many_writers_share_few_transactions_and_each_returns_stored():
    storage = Storage()
    writes = SharedWrites(storage.send)

    def write(n: int) -> bool:
        row = {"PartitionKey": "p", "RowKey": f"r{n:03}", "n": n}
        writes.upsert("table", [row])
        return storage.stored(row)        # stored by the time the call returns
    with ThreadPoolExecutor(32) as pool:
        assert all(pool.map(write, range(300)))
    assert len(storage.rows) == 300
    assert storage.most_at_once == 1       # one transaction of the partition at a time
    assert len(storage.requests) < 100     # about one per pause while writers keep coming


def test_a_lone_writer_sends_at_once_and_partitions_do_not_wait_for_each_other():
    storage = Storage(pause=0.1)
    writes = SharedWrites(storage.send)
    begun = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda partition: writes.upsert("table", [{"PartitionKey": partition, "RowKey": "r"}]),
                      "abcd"))
    assert time.perf_counter() - begun < 0.3 and storage.most_at_once == 4


def test_writes_of_one_row_are_merged_the_later_winning():
    storage = Storage(pause=0.2)
    writes = SharedWrites(storage.send)
    with ThreadPoolExecutor(3) as pool:
        pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "ahead"}])
        time.sleep(0.05)                   # a transaction in flight: the next two fill one
        first = pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "r", "a": 1, "b": 1}])
        time.sleep(0.05)
        second = pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "r", "b": 2}])
        first.result(5), second.result(5)
    assert storage.rows[("p", "r")] == {"PartitionKey": "p", "RowKey": "r", "a": 1, "b": 2}
    assert [len(request) for request in storage.requests] == [1, 1]


def test_a_refused_transaction_is_sent_again_writer_by_writer():
    storage = Storage(pause=0.1)
    writes = SharedWrites(storage.send)
    rows = [{"PartitionKey": "p", "RowKey": f"r{n}", "bad": n == 2} for n in range(4)]
    with ThreadPoolExecutor(4) as pool:
        pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "ahead"}])
        time.sleep(0.03)
        results = [pool.submit(writes.upsert, "table", [row]) for row in rows]
        outcomes = [future.exception(5) for future in results]
    assert [type(outcome).__name__ for outcome in outcomes] == ["NoneType", "NoneType", "ValueError", "NoneType"]
    assert [storage.stored(row) for row in rows] == [True, True, False, True]


def test_a_failure_reaches_every_writer_of_the_transaction_and_the_next_starts_afresh():
    started, release = threading.Event(), threading.Event()

    def send(table, rows):
        if not started.is_set():
            started.set()
            release.wait(5)
            raise ConnectionError("storage went away")
        sent.append(rows)
    sent: list = []
    writes = SharedWrites(send)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "a"}])
        started.wait(5)
        joiners = [pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": k}]) for k in "bc"]
        time.sleep(0.05)
        release.set()
        with pytest.raises(ConnectionError):
            first.result(5)
        assert [joiner.result(5) for joiner in joiners] == [None, None]   # their own transaction, after it
    assert sorted(row["RowKey"] for rows in sent for row in rows) == ["b", "c"]
    writes.upsert("table", [{"PartitionKey": "p", "RowKey": "d"}])
    assert sent[-1] == [{"PartitionKey": "p", "RowKey": "d"}]


def test_a_writer_that_does_not_fit_sends_alone():
    storage = Storage(pause=0.2)
    writes = SharedWrites(storage.send)
    many = [{"PartitionKey": "p", "RowKey": f"r{n:03}"} for n in range(MAX_ROWS - 1)]
    with ThreadPoolExecutor(3) as pool:
        pool.submit(writes.upsert, "table", [{"PartitionKey": "p", "RowKey": "ahead"}])
        time.sleep(0.05)
        filling = pool.submit(writes.upsert, "table", many)
        time.sleep(0.05)
        extra = [{"PartitionKey": "p", "RowKey": "x1"}, {"PartitionKey": "p", "RowKey": "x2"}]
        alone = pool.submit(writes.upsert, "table", extra)
        alone.result(5), filling.result(5)
    assert sorted(len(request) for request in storage.requests) == [1, 2, MAX_ROWS - 1]
    assert all(storage.stored(row) for row in many + extra)


def test_concurrent_upserts_through_azurite_cost_fewer_transactions(azurite):
    """Through the real table client: 64 rows of one partition from 16 threads are all
    stored, in fewer than 64 requests."""
    table = StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")
    requests = []
    send, partition = table.upsert_entity, new_slugid()

    class Counted:                       # the requests the table client is asked to send
        def __getattr__(self, name):
            return getattr(table, name)

        def upsert_entity(self, entity, **kwargs):
            requests.append(1)
            return send(entity, **kwargs)

        def submit_transaction(self, operations, **kwargs):
            requests.append(len(operations))
            return table.submit_transaction(operations, **kwargs)
    counted = Counted()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: upsert_in_batches(counted, [{"PartitionKey": partition, "RowKey": f"r{n:02}",
                                                              "n": n}]), range(64)))
    stored = {row["RowKey"]: row["n"] for row in table.query_entities("PartitionKey eq @pk",
                                                                       parameters={"pk": partition})}
    assert stored == {f"r{n:02}": n for n in range(64)}
    assert sum(requests) == 64 and len(requests) < 64
