"""The storage port's contract: what the services rely on from a storage account, checked
side by side on Azurite (the real Table and Queue services' emulator), signed with the
account key and signed in with an identity's bearer tokens (Azurite in OAuth mode, over
HTTPS), and on the in-memory account the service tests use (`tests/memory_storage.py`). A
behaviour the fake gets wrong fails here, next to the real one's answer."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.domain.ids import new_slugid
from shared.storage.client.account import OPERATIONS, StorageAccount
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.tables.pending_table import BULK, PendingTable
from shared.storage.patterns.queries import first_rows
from tests.conftest import identity_account, unique_prefix
from tests.memory_storage import MemoryAccount


@pytest.fixture(params=["azurite", "identity", "memory"])
def account(request):
    if request.param == "memory":
        return MemoryAccount(unique_prefix())
    if request.param == "identity":
        return identity_account(request.getfixturevalue("oauth_azurite"), request.getfixturevalue("identity_endpoint"),
                                request.getfixturevalue("monkeypatch"))
    return StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix())


@pytest.fixture
def table(account):
    return account.table("Contract")


def row(partition: str, key: str, **properties) -> dict:
    return {"PartitionKey": partition, "RowKey": key, **properties}


def test_every_write_moves_the_etag_and_reads_return_it(table):
    first = table.upsert_entity(row("p", "a", n=1))["etag"]
    assert table.get_entity("p", "a").metadata["etag"] == first
    second = table.upsert_entity(row("p", "a", n=2))["etag"]
    assert second != first and table.get_entity("p", "a")["n"] == 2


def test_inserting_an_existing_row_is_refused(table):
    table.create_entity(row("p", "a"))
    with pytest.raises(ResourceExistsError):
        table.create_entity(row("p", "a"))


def test_conditional_writes_and_deletes_are_refused_once_the_row_changed(table):
    etag = table.upsert_entity(row("p", "a", n=1))["etag"]
    table.upsert_entity(row("p", "a", n=2))
    with pytest.raises(ResourceModifiedError):
        table.update_entity(row("p", "a", n=3), mode=UpdateMode.MERGE, etag=etag,
                            match_condition=MatchConditions.IfNotModified)
    with pytest.raises(ResourceModifiedError):
        table.delete_entity("p", "a", etag=etag, match_condition=MatchConditions.IfNotModified)
    assert table.get_entity("p", "a")["n"] == 2
    current = table.get_entity("p", "a").metadata["etag"]
    table.update_entity(row("p", "a", n=3), mode=UpdateMode.MERGE, etag=current,
                        match_condition=MatchConditions.IfNotModified)
    assert table.get_entity("p", "a")["n"] == 3


def test_updates_of_a_missing_row_are_refused_and_its_delete_is_no_error(table):
    with pytest.raises(ResourceNotFoundError):
        table.update_entity(row("p", "gone", n=1), mode=UpdateMode.MERGE)
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "gone")
    table.delete_entity("p", "gone")                  # the SDK takes the 404 as done


def test_merge_keeps_other_properties_and_replace_drops_them(table):
    table.upsert_entity(row("p", "a", kept=1, changed=1))
    table.upsert_entity(row("p", "a", changed=2), mode=UpdateMode.MERGE)
    assert (table.get_entity("p", "a")["kept"], table.get_entity("p", "a")["changed"]) == (1, 2)
    table.upsert_entity(row("p", "a", changed=3), mode=UpdateMode.REPLACE)
    assert "kept" not in table.get_entity("p", "a")


def test_a_transaction_is_all_or_nothing(table):
    table.create_entity(row("p", "taken"))
    with pytest.raises(TableTransactionError):
        table.submit_transaction([("upsert", row("p", "x")), ("create", row("p", "taken")),
                                  ("upsert", row("p", "y"))])
    assert [entity["RowKey"] for entity in table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"})] \
        == ["taken"]
    with pytest.raises(TableTransactionError):
        table.submit_transaction([("upsert", row("p", "x")), ("delete", row("p", "missing"))])
    table.submit_transaction([("upsert", row("p", "x")), ("delete", row("p", "taken"))])
    assert [entity["RowKey"] for entity in table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"})] \
        == ["x"]


def test_a_transaction_deletes_a_row_given_its_etag_only_if_it_is_unchanged(table):
    etag = table.upsert_entity(row("p", "kept", n=1))["etag"]
    table.upsert_entity(row("p", "other"))
    table.upsert_entity(row("p", "kept", n=2))
    condition = {"etag": etag, "match_condition": MatchConditions.IfNotModified}
    with pytest.raises(TableTransactionError):
        table.submit_transaction([("delete", row("p", "other")), ("delete", row("p", "kept"), condition)])
    assert {entity["RowKey"] for entity in table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"})} \
        == {"kept", "other"}
    current = {**condition, "etag": table.get_entity("p", "kept").metadata["etag"]}
    table.submit_transaction([("delete", row("p", "other")), ("delete", row("p", "kept"), current)])
    assert list(table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"})) == []


def test_a_transaction_names_each_row_once(table):
    with pytest.raises(TableTransactionError):
        table.submit_transaction([("upsert", row("p", "x", n=1)), ("upsert", row("p", "x", n=2))])


def test_queries_see_rows_in_key_order_across_pages_with_the_filters_the_adapters_use(table):
    keys = [f"k{number:03d}" for number in range(30)]
    for start in range(0, 30, 10):
        table.submit_transaction([("upsert", row("p", key, due=key)) for key in reversed(keys[start:start + 10])])
    table.upsert_entity(row("q", "other", due="k005"))
    found = first_rows(table, "PartitionKey eq @pk and RowKey gt @after", {"pk": "p", "after": "k004"}, 100)
    assert [entity["RowKey"] for entity in found] == keys[5:]
    page_by_page = list(table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"}, results_per_page=7))
    assert [entity["RowKey"] for entity in page_by_page] == keys
    across = first_rows(table, "due le @due", {"due": "k005"}, 100, ["PartitionKey", "RowKey"])
    assert [(entity["PartitionKey"], entity["RowKey"]) for entity in across] == \
        [("p", key) for key in keys[:6]] + [("q", "other")]
    assert set(across[0]) == {"PartitionKey", "RowKey"}          # select
    assert [entity["RowKey"] for entity in first_rows(
        table, "PartitionKey eq @pk and RowKey gt 'k027' and RowKey ne @last", {"pk": "p", "last": "k029"}, 10)] \
        == ["k028"]


def test_each_query_page_and_each_request_is_one_counted_round_trip(table):
    table.submit_transaction([("upsert", row("p", f"k{number:02d}")) for number in range(10)])
    before = OPERATIONS.value
    assert len(list(table.query_entities("PartitionKey eq @pk", parameters={"pk": "p"}, results_per_page=4))) == 10
    table.get_entity("p", "k00")
    assert OPERATIONS.value - before == 4                        # three pages and a read


def test_the_adapters_behave_alike(account):
    claims = ClaimTable(account)
    claims.add([ClaimRow("prov/type", "task", 0, "wg", "w", "2030-01-01T00:00:00.000Z"),
                ClaimRow("prov/type", "later", 0, "wg", "w", "2031-01-01T00:00:00.000Z")])
    claims.move(ClaimRow("prov/type", "gone", 0, "wg", "w"), "2030-01-01T00:00:00.000Z")   # never brought back
    assert [row.task_id for row in claims.due("2030-06-01T00:00:00.000Z", 10)] == ["task"]
    assert claims.held_by("prov/type", "wg", "w") == [("later", 0), ("task", 0)]
    claims.remove([ClaimRow("prov/type", "task", 0, "wg", "w"), ClaimRow("prov/type", "gone", 0, "wg", "w")])
    assert claims.count("prov/type") == 1
    claims.remove_soon([ClaimRow("prov/type", "later", 0, "wg", "w"), ClaimRow("prov/type", "gone", 0, "wg", "w")])
    assert claims.flush_removals() == 2 and claims.count("prov/type") == 0   # one gone before: no error
    pending = PendingTable(account)
    pending.add_many([("prov/type", 2, "2030-01-01T00:00:00.000Z", "b", 0),
                      ("prov/type", 1, "2030-01-02T00:00:00.000Z", "a", 0)])
    hints = pending.peek("prov/type", 10)
    assert [hint.task_id for hint in hints] == ["a", "b"]       # priority rank first
    pending.remove_soon(hints[:1])
    assert [hint.task_id for hint in pending.peek("prov/type", 10)] == ["b"]   # read as gone at once
    pending.remove_soon(hints + hints[:1])
    assert pending.count("prov/type") == 0
    # One bucket per priority and scheduled second, read as one queue in claim order; a
    # queue whose id extends another's stays apart.
    pending.add_many([("prov/type", 1, f"2030-01-01T00:00:{second:02d}.{milli:03d}Z", f"t{second}{milli}", 0)
                      for second in (9, 0, 5) for milli in (500, 1)]
                     + [("prov/type2", 0, "2029-01-01T00:00:00.000Z", "x", 0)])
    assert [hint.task_id for hint in pending.peek("prov/type", 10)] == ["t01", "t0500", "t51", "t5500", "t91", "t9500"]
    assert pending.count("prov/type") == 6 and pending.count("prov/type2") == 1
    pending.remove_soon(pending.peek("prov/type", 10))
    assert pending.count("prov/type") == 0 and [hint.task_id for hint in pending.peek("prov/type2", 5)] == ["x"]
    # Beyond BULK hints of one second written at once (an extension's ready tasks) are spread
    # by taskId, after the second's own bucket; a claim deletes them where it read them.
    bulk = [("prov/type", 1, "2030-01-01T00:00:01.000Z", new_slugid(), 0) for _ in range(BULK + 50)]
    pending.add_many(bulk)
    pending.add_many([("prov/type", 1, "2030-01-01T00:00:01.500Z", "single", 0),
                      ("prov/type", 1, "2030-01-01T00:00:02.000Z", "later", 0)])
    hints = pending.peek("prov/type", 500)
    assert [hint.task_id for hint in hints] == ["single"] + sorted(task_id for *_, task_id, _ in bulk) + ["later"]
    assert len({hint.partition for hint in hints}) > 20
    pending.remove_soon(hints[:-1])
    pending.remove_run("prov/type", 1, "2030-01-01T00:00:02.000Z", "later", 0)
    assert pending.count("prov/type") == 0


def test_queues_hold_received_messages_count_deliveries_and_delay_sends(account):
    queue = account.queue(f"{unique_prefix()}-contract")
    queue.send({"n": 1})
    queue.send({"n": 2}, timedelta(seconds=2))
    queue.send_raw("not JSON")
    received = queue.receive(32, timedelta(seconds=1))
    assert [message.body for message in received] == [{"n": 1}, None]
    assert queue.receive(32, timedelta(seconds=1)) == []          # held
    time.sleep(1.2)
    again = queue.receive(32, timedelta(seconds=30))
    assert sorted(message.dequeue_count for message in again) == [2, 2]
    for message in again:
        queue.delete(message)
    queue.delete(again[0])                                        # twice: no error
    time.sleep(1.0)
    assert [message.body for message in queue.receive(32, timedelta(seconds=30))] == [{"n": 2}]


def test_a_delayed_message_withdrawn_by_its_sender_is_never_delivered(account):
    queue = account.queue(f"{unique_prefix()}-withdrawn")
    withdrawn = queue.send({"n": 1}, timedelta(seconds=1))
    queue.send({"n": 2}, timedelta(seconds=1))
    queue.delete(withdrawn)
    queue.delete(withdrawn)                                        # twice: no error
    time.sleep(1.5)
    assert [message.body for message in queue.receive(32, timedelta(seconds=30))] == [{"n": 2}]


def test_a_delayed_message_received_since_is_left_to_its_receiver_when_its_sender_withdraws_it(account):
    queue = account.queue(f"{unique_prefix()}-taken")
    sent = queue.send({"n": 1}, timedelta(seconds=1))
    time.sleep(1.5)
    [received] = queue.receive(32, timedelta(seconds=1))
    queue.delete(sent)                                             # too late: no error, and it stays
    time.sleep(1.2)
    [again] = queue.receive(32, timedelta(seconds=30))
    assert (again.body, again.dequeue_count) == ({"n": 1}, 2)
