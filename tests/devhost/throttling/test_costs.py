"""Which partition a storage request lands on and what it costs there, for the requests our
clients and the SDKs send (paths as Azurite takes them: the account first)."""

from __future__ import annotations

import json

from shared.storage.client import transactions
from shared.storage.client.entities import row_path
from devhost.throttling import costs


def test_a_point_read_or_write_costs_one_entity_of_its_partition():
    path = row_path("/devstoreaccount1/Tasks", "proj/linux's", "row 1")
    for method, write in (("GET", False), ("PATCH", True), ("PUT", True), ("DELETE", True)):
        charge = costs.of("table", method, path + "?timeout=30", b"{}")
        assert (charge.partition, charge.units, charge.limited, charge.write) == (
            "table Tasks proj/linux's", 1, True, write)


def test_an_insert_lands_on_the_partition_its_row_names():
    body = json.dumps({"PartitionKey": 'queue "a"', "RowKey": "r", "n": 1}).encode()
    charge = costs.of("table", "POST", "/devstoreaccount1/Workers", body)
    assert (charge.partition, charge.units, charge.write) == ('table Workers queue "a"', 1, True)


def test_a_transaction_costs_its_entities_on_its_partition():
    operations = [("upsert", {"PartitionKey": "p'1", "RowKey": str(n)}) for n in range(7)]
    operations.append(("create", {"PartitionKey": "p'1", "RowKey": "new"}))
    content_type, body = transactions.body("http://127.0.0.1:1/devstoreaccount1/Claims", "2019-02-02", operations)
    charge = costs.of("table", "POST", "/devstoreaccount1/$batch", body)
    assert (charge.partition, charge.units, charge.limited, charge.write) == ("table Claims p'1", 8, True, True)


def test_a_transaction_of_inserts_alone_finds_its_partition_in_the_rows():
    _, body = transactions.body("http://127.0.0.1:1/devstoreaccount1/Tasks", "2019-02-02",
                                [("create", {"PartitionKey": "k", "RowKey": str(n)}) for n in range(3)])
    assert costs.of("table", "POST", "/devstoreaccount1/$batch", body).partition == "table Tasks k"


def test_a_query_on_one_partition_counts_there_and_a_scan_on_no_partition_of_its_own():
    one = costs.of("table", "GET", "/devstoreaccount1/Pending()?$filter=PartitionKey%20eq%20%27q%27%20and%20"
                                   "RowKey%20gt%20%27a%27&$top=5", None)
    assert (one.partition, one.limited, one.reads_rows) == ("table Pending q", True, True)
    for query in ("PartitionKey%20ge%20%27a%27%20and%20PartitionKey%20lt%20%27b%27",
                  "PartitionKey%20eq%20%27a%27%20or%20PartitionKey%20eq%20%27b%27", ""):
        scan = costs.of("table", "GET", f"/devstoreaccount1/Pending()?$filter={query}", None)
        assert (scan.partition, scan.limited) == ("table Pending (scan)", False)


def test_tables_created_or_listed_count_on_the_account_alone():
    for method, path in (("POST", "/devstoreaccount1/Tables"), ("GET", "/devstoreaccount1/Tables"),
                         ("DELETE", "/devstoreaccount1/Tables('Rows')")):
        assert costs.of("table", method, path, b'{"TableName": "Rows"}').partition is None


def test_a_queue_is_one_partition_and_a_dequeue_counts_the_messages_it_carries():
    put = costs.of("queue", "POST", "/devstoreaccount1/q-resolved/messages?messagettl=-1", b"<QueueMessage/>")
    dequeue = costs.of("queue", "GET", "/devstoreaccount1/q-resolved/messages?numofmessages=32", None)
    peek = costs.of("queue", "GET", "/devstoreaccount1/q-resolved/messages?peekonly=true", None)
    assert (put.partition, put.limited, put.write, put.reads_rows) == ("queue q-resolved", True, True, False)
    assert (dequeue.write, dequeue.reads_rows, peek.reads_rows) == (False, True, False)
    answer = b"<QueueMessagesList>" + b"<QueueMessage><MessageId>m</MessageId></QueueMessage>" * 3 + b"</QueueMessagesList>"
    assert costs.rows_in(dequeue, answer) == 3
    assert costs.of("queue", "GET", "/devstoreaccount1?comp=list", None).partition is None


def test_a_query_answer_counts_its_rows():
    query = costs.of("table", "GET", "/devstoreaccount1/Rows()", None)
    assert costs.rows_in(query, json.dumps({"value": [{"a": 1}, {"a": 2}]}).encode()) == 2
    assert costs.rows_in(query, b"not json") == 0


def test_blobs_count_by_container_without_a_target_of_their_own():
    charge = costs.of("blob", "PUT", "/devstoreaccount1/artifacts/task/0/public/logs/live.log", b"x")
    assert (charge.partition, charge.limited, charge.write) == ("blob artifacts", False, True)
