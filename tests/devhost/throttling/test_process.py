"""The throttling proxy in a process of its own: started, used, counted, stopped."""

from __future__ import annotations

import pytest
from azure.data.tables import TableClient

from devhost.processes import port_open
from devhost.throttling.process import ThrottledStorage
from tests.conftest import unique_prefix
from tests.devhost.conftest import alive


def test_the_proxy_process_fronts_azurite_counts_and_stops(azurite):
    with ThrottledStorage(azurite.connection_string, scale=10) as throttled:
        pid, ports = throttled.process.pid, throttled.ports
        assert set(ports) == {"blob", "queue", "table"}
        table = TableClient.from_connection_string(throttled.connection_string, unique_prefix())
        table.create_table()
        table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
        counts = throttled.reset()
        assert counts["scale"] == 10 and counts["partitions"][f"table {table.table_name} p"]["requests"] == 1
        assert throttled.counts()["partitions"] == {}
    assert not alive(pid) and not any(port_open(port) for port in ports.values())


def test_a_connection_that_is_no_local_azurites_is_an_error():
    with pytest.raises(RuntimeError, match="not a local Azurite"):
        ThrottledStorage("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5", scale=10).start()
