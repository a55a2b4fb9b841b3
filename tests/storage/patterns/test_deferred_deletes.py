"""Deferred deletes against Azurite: rows go in one flush, and a flush that finds nothing
waiting still waits for one under way (a count right after it must not see those rows)."""

import threading

import pytest

from shared.storage.client.account import StorageAccount
from shared.storage.patterns.deferred_deletes import DeferredDeletes
from tests.conftest import unique_prefix


@pytest.fixture
def table(azurite):
    return StorageAccount(azurite.connection_string, unique_prefix()).table("Deferred")


def keys_of(table) -> list[str]:
    return sorted(row["RowKey"] for row in table.query_entities("PartitionKey eq 'q'", select=["RowKey"]))


class HeldTable:
    """The table, with transactions held until released: a flush caught midway."""

    def __init__(self, table) -> None:
        self._table = table
        self.entered = threading.Event()
        self.release = threading.Event()

    def submit_transaction(self, operations):
        self.entered.set()
        assert self.release.wait(10)
        return self._table.submit_transaction(operations)

    def __getattr__(self, name):
        return getattr(self._table, name)


def test_waiting_rows_are_deleted_together_by_a_flush(table):
    for key in "abc":
        table.upsert_entity({"PartitionKey": "q", "RowKey": key})
    deletes = DeferredDeletes(table, "test")
    deletes.add([("q", "a"), ("q", "b")])
    deletes.add([("q", "b"), ("q", "gone")])          # a repeat, and a row already gone

    assert deletes.flush() == 3
    assert keys_of(table) == ["c"]
    assert deletes.flush() == 0


def test_a_flush_waits_for_the_one_under_way(table):
    for key in "ab":
        table.upsert_entity({"PartitionKey": "q", "RowKey": key})
    held = HeldTable(table)
    deletes = DeferredDeletes(held, "test")
    deletes.add([("q", "a"), ("q", "b")])
    first = threading.Thread(target=deletes.flush)
    first.start()
    assert held.entered.wait(10)                       # the first flush has taken the rows

    second_done = threading.Event()
    second = threading.Thread(target=lambda: (deletes.flush(), second_done.set()))
    second.start()
    assert not second_done.wait(0.3)                   # nothing waiting, yet it does not return
    held.release.set()
    first.join(10)
    second.join(10)

    assert second_done.is_set() and keys_of(table) == []
