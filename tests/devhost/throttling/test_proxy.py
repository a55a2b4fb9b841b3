"""The throttling proxy in front of a real Azurite, seen through Azure's own SDK clients
(their retries turned off, to see each answer): what it refuses and how, what it forwards,
and what it counts."""

from __future__ import annotations

import uuid

import pytest
import requests
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.data.tables import TableClient
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from devhost.throttling.proxy import COUNTS_PATH, endpoints_moved, upstream_ports
from tests.conftest import unique_prefix


def table_client(connection: str, name: str) -> TableClient:
    client = TableClient.from_connection_string(connection, name, retry_total=0)
    try:
        client.create_table()
    except HttpResponseError:
        pass
    return client


@pytest.fixture
def names():
    prefix = unique_prefix()
    return prefix, f"{prefix}-queue"


def test_a_table_request_beyond_its_partitions_target_is_refused_as_azure_refuses_it(azurite, throttling, names):
    proxy = throttling(1000)   # 2 entities/s a partition
    table = table_client(proxy.connection_string(azurite.connection_string), names[0])
    direct = TableClient.from_connection_string(azurite.connection_string, names[0])
    refusals = []
    for n in range(5):
        try:
            table.upsert_entity({"PartitionKey": "hot", "RowKey": str(n)})
        except HttpResponseError as refused:
            refusals.append(refused)
    assert refusals and all(refused.status_code == 503 and refused.error_code == "ServerBusy" for refused in refusals)
    assert "RequestId:" in refusals[0].message
    served = len(list(direct.query_entities("PartitionKey eq 'hot'")))
    assert served == 5 - len(refusals)                     # a refused write never reached Azurite
    counts = proxy.throttle.counts()["partitions"][f"table {names[0]} hot"]
    assert (counts["requests"], counts["refused"]) == (served, len(refusals))


def test_the_tables_error_is_odata_json_and_the_queues_xml(azurite, throttling, names):
    proxy = throttling(1)
    ports = proxy.ports
    proxy.throttle.arm("busy", where=lambda charge: True)
    table = requests.get(f"http://127.0.0.1:{ports['table']}/devstoreaccount1/{names[0]}()",
                         headers={"x-ms-version": "2019-02-02"}, timeout=10)
    proxy.throttle.arm("busy", where=lambda charge: True)
    queue = requests.get(f"http://127.0.0.1:{ports['queue']}/devstoreaccount1/{names[1]}/messages", timeout=10)
    assert (table.status_code, table.headers["x-ms-error-code"], table.headers["x-ms-version"]) == \
        (503, "ServerBusy", "2019-02-02")
    assert table.json()["odata.error"]["code"] == "ServerBusy"
    assert queue.status_code == 503 and queue.headers["Content-Type"] == "application/xml"
    assert "<Code>ServerBusy</Code>" in queue.text


def test_a_queue_beyond_its_target_is_refused_and_the_sdk_reads_the_refusal(azurite, throttling, names):
    proxy = throttling(1000)   # 2 messages/s a queue
    queue = QueueClient.from_connection_string(proxy.connection_string(azurite.connection_string), names[1],
                                               retry_total=0)
    queue.create_queue()
    with pytest.raises(HttpResponseError) as refused:
        for _ in range(5):
            queue.send_message("hint")
    assert (refused.value.status_code, refused.value.error_code) == (503, "ServerBusy")


def test_a_write_that_times_out_has_landed(azurite, throttling, names):
    proxy = throttling(1)
    table = table_client(proxy.connection_string(azurite.connection_string), names[0])
    proxy.throttle.arm("timeout")
    with pytest.raises(HttpResponseError) as timed_out:
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    answer = timed_out.value.response
    assert (answer.status_code, answer.headers["x-ms-error-code"]) == (500, "OperationTimedOut")
    assert answer.json()["odata.error"]["code"] == "OperationTimedOut"
    assert table.get_entity("p", "r")["n"] == 1
    assert proxy.throttle.counts()["partitions"][f"table {names[0]} p"]["timed_out"] == 1


def test_a_transaction_counts_its_entities_on_its_partition_and_one_request_on_the_account(azurite, throttling,
                                                                                             names):
    proxy = throttling(1)
    table = table_client(proxy.connection_string(azurite.connection_string), names[0])
    proxy.throttle.reset()
    table.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": str(n)}) for n in range(10)])
    assert len(list(table.query_entities("PartitionKey eq 'p'"))) == 10   # a query: its 10 rows count too
    counts = proxy.throttle.counts()
    assert counts["partitions"][f"table {names[0]} p"] == {"requests": 2, "units": 20, "refused": 0, "timed_out": 0}
    assert counts["account"]["requests"] == 2


def test_blobs_pass_through_whole_and_are_counted_by_container(azurite, throttling, names):
    proxy = throttling(1)
    service = BlobServiceClient.from_connection_string(proxy.connection_string(azurite.connection_string),
                                                       retry_total=0)
    container = service.get_container_client(names[0])
    container.create_container()
    data = uuid.uuid4().bytes * 10_000
    container.upload_blob("task/0/public/log.txt", data)
    blob = container.get_blob_client("task/0/public/log.txt")
    assert blob.get_blob_properties().size == len(data)      # a HEAD: the blob's length, no body
    assert blob.download_blob().readall() == data
    blob.delete_blob()
    with pytest.raises(ResourceNotFoundError):
        blob.get_blob_properties()
    assert proxy.throttle.counts()["partitions"][f"blob {names[0]}"]["requests"] == 6


def test_the_counts_are_served_on_each_port_and_reset_by_a_delete(azurite, throttling, names):
    proxy = throttling(1)
    table_client(proxy.connection_string(azurite.connection_string), names[0]).upsert_entity(
        {"PartitionKey": "p", "RowKey": "r"})
    counted = requests.get(f"http://127.0.0.1:{proxy.ports['queue']}{COUNTS_PATH}", timeout=10).json()
    assert counted["scale"] == 1 and counted["partitions"][f"table {names[0]} p"]["requests"] == 1
    assert requests.delete(f"http://127.0.0.1:{proxy.ports['blob']}{COUNTS_PATH}", timeout=10).ok
    assert proxy.throttle.counts()["partitions"] == {}


def test_endpoints_are_moved_to_the_proxy_and_only_a_local_azurite_is_fronted(azurite):
    moved = endpoints_moved(azurite.connection_string, {"table": 1234})
    assert "TableEndpoint=http://127.0.0.1:1234/devstoreaccount1;" in moved
    assert f"QueueEndpoint=http://127.0.0.1:{azurite.ports['queue']}/devstoreaccount1;" in moved
    assert upstream_ports(azurite.connection_string) == azurite.ports
    with pytest.raises(ValueError, match="endpoint is not a local Azurite's"):
        upstream_ports("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5")
