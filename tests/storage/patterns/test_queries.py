"""Reading a row that may not exist, and the first rows of a query across storage's pages (at
most 1,000 rows each)."""

from shared.domain.ids import new_slugid
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.queries import any_row, first_rows, row_or_none
from shared.storage.tables.task_group_table import TaskGroupTable
from tests.conftest import as_members, unique_prefix


def test_a_listing_longer_than_one_storage_page_is_read_whole(azurite):
    """listTaskGroup asks for a page + 1 members to know whether to give a continuation
    token; with 1,001 asked, storage answers 1,000 in a first page (it lost the token)."""
    groups = TaskGroupTable(StorageAccount(azurite.connection_string, unique_prefix()))
    group_id, members = new_slugid(), sorted(new_slugid() for _ in range(1002))
    groups.add_members(group_id, as_members(members))
    assert groups.members(group_id, "", 1001) == members[:1001]
    assert groups.members(group_id, members[1000], 5) == members[1001:]


def test_first_rows_and_any_row_follow_the_query(azurite):
    table = StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")
    for key in ("a", "b", "c"):
        table.upsert_entity({"PartitionKey": "p", "RowKey": key})
    query = "PartitionKey eq @pk and RowKey gt @after"
    assert [row["RowKey"] for row in first_rows(table, query, {"pk": "p", "after": "a"}, 5)] == ["b", "c"]
    assert any_row(table, query, {"pk": "p", "after": "b"})
    assert not any_row(table, query, {"pk": "p", "after": "c"})


def test_a_row_read_by_its_keys_is_none_when_missing_and_carries_its_etag_when_found(azurite):
    table = StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")
    written = table.upsert_entity({"PartitionKey": "p", "RowKey": "a", "note": "here", "other": 1})
    found = row_or_none(table, "p", "a", select=["note"])
    assert found["note"] == "here" and "other" not in found
    assert found.metadata["etag"] == written["etag"]
    assert row_or_none(table, "p", "b") is None
    assert row_or_none(table, "q", "a") is None
