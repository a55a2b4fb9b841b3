"""Transactions written and read without the SDK's multipart code do what the SDK's do."""

import pytest
from azure.data.tables import TableTransactionError

from shared.domain.ids import new_slugid
from shared.storage.account import StorageAccount
from shared.storage.transactions import submit
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount


@pytest.fixture
def table(azurite):
    return StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")


def rows_of(table, partition: str) -> dict:
    return {row["RowKey"]: dict(row) for row in table.query_entities("PartitionKey eq @pk",
                                                                     parameters={"pk": partition})}


def test_upserts_merge_columns_and_keep_their_types(table):
    partition = f"{new_slugid()}'~:é"                  # a quote, a tilde, a colon, non-ASCII
    submit(table, [("upsert", {"PartitionKey": partition, "RowKey": "a.'b", "text": 'x\n"é', "on": True, "n": -7}),
                   ("upsert", {"PartitionKey": partition, "RowKey": "c"})])
    submit(table, [("upsert", {"PartitionKey": partition, "RowKey": "a.'b", "n": 2 ** 31 - 1, "more": ""}),
                   ("upsert", {"PartitionKey": partition, "RowKey": "d"})])
    assert rows_of(table, partition) == {
        "a.'b": {"PartitionKey": partition, "RowKey": "a.'b", "text": 'x\n"é', "on": True, "n": 2 ** 31 - 1, "more": ""},
        "c": {"PartitionKey": partition, "RowKey": "c"}, "d": {"PartitionKey": partition, "RowKey": "d"}}


def test_a_refused_operation_refuses_the_whole_transaction(table):
    partition = new_slugid()
    submit(table, [("upsert", {"PartitionKey": partition, "RowKey": key}) for key in "ab"])
    with pytest.raises(TableTransactionError) as refused:
        submit(table, [("delete", {"PartitionKey": partition, "RowKey": "a"}),
                       ("delete", {"PartitionKey": partition, "RowKey": "gone"})])
    assert refused.value.error_code == "ResourceNotFound"
    assert set(rows_of(table, partition)) == {"a", "b"}          # nothing applied
    submit(table, [("delete", {"PartitionKey": partition, "RowKey": key}) for key in "ab"])
    assert rows_of(table, partition) == {}


def test_creates_and_conditional_updates_answer_their_etags_as_the_sdk_does(table):
    """A create is refused if its row exists, an update unless its row is at the ETag given;
    each write answers its row's new ETag, which a point read then finds."""
    from azure.core import MatchConditions

    partition = new_slugid()
    answers = submit(table, [("create", {"PartitionKey": partition, "RowKey": "a", "n": 1}),
                             ("upsert", {"PartitionKey": partition, "RowKey": "b"})])
    etag = answers[0]["etag"]
    assert etag == table.get_entity(partition, "a").metadata["etag"] and answers[1]["etag"]

    def update(n: int, at: str) -> list[dict]:
        return submit(table, [("update", {"PartitionKey": partition, "RowKey": "a", "n": n},
                               {"etag": at, "match_condition": MatchConditions.IfNotModified}),
                              ("delete", {"PartitionKey": partition, "RowKey": "b"})])
    newer = update(2, etag)[0]["etag"]
    assert newer != etag and table.get_entity(partition, "a").metadata["etag"] == newer
    submit(table, [("upsert", {"PartitionKey": partition, "RowKey": "b"})])
    with pytest.raises(TableTransactionError):
        update(3, etag)                                          # changed since: refused whole
    with pytest.raises(TableTransactionError):
        submit(table, [("create", {"PartitionKey": partition, "RowKey": "a", "n": 9}),
                       ("upsert", {"PartitionKey": partition, "RowKey": "c"})])
    assert {key: row.get("n") for key, row in rows_of(table, partition).items()} == {"a": 2, "b": None}


def test_other_columns_and_other_clients_go_through_the_sdk(table):
    partition = new_slugid()
    submit(table, [("upsert", {"PartitionKey": partition, "RowKey": "f", "ratio": 0.5}),
                   ("upsert", {"PartitionKey": partition, "RowKey": "g"})])
    assert rows_of(table, partition)["f"]["ratio"] == 0.5
    fake = MemoryAccount().table("Rows")
    submit(fake, [("upsert", {"PartitionKey": "p", "RowKey": key}) for key in "xy"])
    assert sorted(row["RowKey"] for row in fake.query_entities("PartitionKey eq @pk", parameters={"pk": "p"})) \
        == ["x", "y"]


def test_a_transaction_refused_whole_is_raised_as_the_sdk_raises_it(table, monkeypatch):
    """Storage answering the whole request with 413 (Azure's 4 MiB limit, which Azurite does
    not enforce): a TableTransactionError, so writers sharing it are sent again one by one."""
    from azure.data.tables import RequestTooLargeError

    class TooLarge:
        status_code, reason, headers, content_type = 413, "Request Entity Too Large", {}, "application/json"
        body = b'{"odata.error":{"code":"RequestBodyTooLarge","message":{"value":"too large"}}}'

        def read(self):
            return self.body

        def text(self, encoding=None):
            return self.body.decode()
    monkeypatch.setattr(table._client._client, "send_request", lambda request, **kwargs: TooLarge())
    with pytest.raises(RequestTooLargeError) as refused:
        submit(table, [("upsert", {"PartitionKey": "p", "RowKey": key}) for key in "ab"])
    assert isinstance(refused.value, TableTransactionError) and "413" in str(refused.value)
