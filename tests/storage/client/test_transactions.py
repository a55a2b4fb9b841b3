"""Transactions written and read without the SDK's multipart code do what the SDK's do."""

import pytest
from azure.data.tables import TableTransactionError

from shared.domain.ids import new_slugid
from shared.storage.client.account import StorageAccount
from shared.storage.client.connections import Answer
from tests.conftest import unique_prefix


@pytest.fixture
def table(azurite):
    return StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")


def rows_of(table, partition: str) -> dict:
    return {row["RowKey"]: dict(row) for row in table.query_entities("PartitionKey eq @pk",
                                                                     parameters={"pk": partition})}


def test_upserts_merge_columns_and_keep_their_types(table):
    partition = f"{new_slugid()}'~:é"                  # a quote, a tilde, a colon, non-ASCII
    table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": "a.'b", "text": 'x\n"é', "on": True, "n": -7}),
                   ("upsert", {"PartitionKey": partition, "RowKey": "c"})])
    table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": "a.'b", "n": 2 ** 31 - 1, "more": ""}),
                   ("upsert", {"PartitionKey": partition, "RowKey": "d"})])
    assert rows_of(table, partition) == {
        "a.'b": {"PartitionKey": partition, "RowKey": "a.'b", "text": 'x\n"é', "on": True, "n": 2 ** 31 - 1, "more": ""},
        "c": {"PartitionKey": partition, "RowKey": "c"}, "d": {"PartitionKey": partition, "RowKey": "d"}}


def test_a_refused_operation_refuses_the_whole_transaction(table):
    partition = new_slugid()
    table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": key}) for key in "ab"])
    with pytest.raises(TableTransactionError) as refused:
        table.submit_transaction([("delete", {"PartitionKey": partition, "RowKey": "a"}),
                       ("delete", {"PartitionKey": partition, "RowKey": "gone"})])
    assert refused.value.error_code == "ResourceNotFound"
    assert set(rows_of(table, partition)) == {"a", "b"}          # nothing applied
    table.submit_transaction([("delete", {"PartitionKey": partition, "RowKey": key}) for key in "ab"])
    assert rows_of(table, partition) == {}


def test_creates_and_conditional_updates_answer_their_etags_as_the_sdk_does(table):
    """A create is refused if its row exists, an update unless its row is at the ETag given;
    each write answers its row's new ETag, which a point read then finds."""
    from azure.core import MatchConditions

    partition = new_slugid()
    answers = table.submit_transaction([("create", {"PartitionKey": partition, "RowKey": "a", "n": 1}),
                             ("upsert", {"PartitionKey": partition, "RowKey": "b"})])
    etag = answers[0]["etag"]
    assert etag == table.get_entity(partition, "a").metadata["etag"] and answers[1]["etag"]

    def update(n: int, at: str) -> list[dict]:
        return table.submit_transaction([("update", {"PartitionKey": partition, "RowKey": "a", "n": n},
                               {"etag": at, "match_condition": MatchConditions.IfNotModified}),
                              ("delete", {"PartitionKey": partition, "RowKey": "b"})])
    newer = update(2, etag)[0]["etag"]
    assert newer != etag and table.get_entity(partition, "a").metadata["etag"] == newer
    table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": "b"})])
    with pytest.raises(TableTransactionError):
        update(3, etag)                                          # changed since: refused whole
    with pytest.raises(TableTransactionError):
        table.submit_transaction([("create", {"PartitionKey": partition, "RowKey": "a", "n": 9}),
                       ("upsert", {"PartitionKey": partition, "RowKey": "c"})])
    assert {key: row.get("n") for key, row in rows_of(table, partition).items()} == {"a": 2, "b": None}


def test_other_columns_are_typed_as_the_sdk_types_them(table):
    from datetime import datetime, timezone

    from azure.data.tables import EdmType, EntityProperty

    partition, when = new_slugid(), datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": "f", "ratio": 0.5, "big": EntityProperty(2 ** 40, EdmType.INT64)}),
                              ("upsert", {"PartitionKey": partition, "RowKey": "g", "when": when})])
    rows = rows_of(table, partition)
    assert rows["f"]["ratio"] == 0.5 and rows["f"]["big"].value == 2 ** 40 and rows["g"]["when"] == when


def test_a_transaction_refused_whole_is_raised_as_the_sdk_raises_it(table, monkeypatch):
    """Storage answering the whole request with 413 (Azure's 4 MiB limit, which Azurite does
    not enforce): a TableTransactionError, so writers sharing it are sent again one by one."""
    from azure.data.tables import RequestTooLargeError

    body = b'{"odata.error":{"code":"RequestBodyTooLarge","message":{"value":"too large"}}}'
    monkeypatch.setattr(table._connections, "send", lambda *args: Answer(413, "Request Entity Too Large", {}, body))
    with pytest.raises(RequestTooLargeError) as refused:
        table.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": key}) for key in "ab"])
    assert isinstance(refused.value, TableTransactionError) and "413" in str(refused.value)
