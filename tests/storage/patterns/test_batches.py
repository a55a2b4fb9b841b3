"""Batched upserts against Azurite: transactions of at most 100 rows, sent concurrently,
pairs kept together, and a failure reported."""

import pytest
from azure.core.exceptions import HttpResponseError

from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import upsert_in_batches
from tests.conftest import unique_prefix


@pytest.fixture
def table(azurite):
    return StorageAccount(azurite.connection_string, unique_prefix()).table("Batches")


def rows_of(table, partition: str) -> list[dict]:
    return list(table.query_entities("PartitionKey eq @pk", parameters={"pk": partition}))


def test_every_row_lands_in_transactions_of_at_most_100(table):
    big = [{"PartitionKey": "big", "RowKey": f"{i:04d}", "n": i} for i in range(250)]
    scattered = [{"PartitionKey": f"p{i:03d}", "RowKey": "row", "n": i} for i in range(40)]

    sent = upsert_in_batches(table, big + scattered)

    assert sent == 3 + 40                     # 100 + 100 + 50 rows, then one upsert per partition
    assert [row["n"] for row in rows_of(table, "big")] == list(range(250))
    assert all(rows_of(table, row["PartitionKey"])[0]["n"] == row["n"] for row in scattered)
    assert upsert_in_batches(table, big + scattered) == 43   # upserts: repeating is harmless
    assert len(rows_of(table, "big")) == 250


def test_a_pair_written_together_is_never_split(table):
    # Pairs (a member and its marker) in one partition: a batch boundary falls between pairs.
    rows = [row for i in range(120) for row in ({"PartitionKey": "g", "RowKey": f"member.{i:03d}"},
                                                 {"PartitionKey": "g", "RowKey": f"member.{i:03d}.open"})]
    assert upsert_in_batches(table, rows) == 3
    assert len(rows_of(table, "g")) == 240


def test_a_failed_transaction_is_raised(table):
    rows = [{"PartitionKey": "ok", "RowKey": str(i)} for i in range(5)]
    rows += [{"PartitionKey": "bad", "RowKey": "a", "text": "x" * 40_000},   # over 64 KiB of UTF-16
             {"PartitionKey": "bad", "RowKey": "b"}]
    with pytest.raises(HttpResponseError):
        upsert_in_batches(table, rows)
    assert rows_of(table, "bad") == []         # a transaction lands whole or not at all
