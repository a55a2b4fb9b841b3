"""Rows written and read by our own codec, compared with what the SDK's public client writes
and reads on the same Table service."""

import uuid
from datetime import datetime, timezone

import pytest
from azure.data.tables import EdmType, EntityProperty, TableServiceClient

from shared.storage.client.account import StorageAccount
from shared.storage.client.entities import from_json, to_json
from tests.conftest import unique_prefix

WHEN = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
VALUES = {"text": "x\n\"é'", "on": True, "n": -7, "big": EntityProperty(2 ** 40, EdmType.INT64), "ratio": 0.5,
          "when": WHEN, "id": uuid.UUID(int=7), "bytes": b"\x00\xffab", "whole": 2.0}


@pytest.fixture
def tables(azurite):
    prefix = unique_prefix()
    ours = StorageAccount(azurite.connection_string, prefix).table("Codec")
    sdk = TableServiceClient.from_connection_string(azurite.connection_string).get_table_client(ours.table_name)
    return ours, sdk


def test_what_we_write_the_sdk_reads_as_it_wrote_it_and_back(tables):
    ours, sdk = tables
    ours.upsert_entity({"PartitionKey": "p", "RowKey": "ours", **VALUES})
    sdk.upsert_entity({"PartitionKey": "p", "RowKey": "sdk's", **VALUES})
    for key in ("ours", "sdk's"):
        by_sdk, by_us = sdk.get_entity("p", key), ours.get_entity("p", key)
        assert dict(by_us) == {name: by_sdk[name] for name in by_sdk}
        assert by_us["big"].value == 2 ** 40 and by_us["when"] == WHEN and by_us["bytes"] == b"\x00\xffab"
        assert by_us.metadata["etag"] == by_sdk.metadata["etag"]
        assert by_us.metadata["timestamp"] == by_sdk.metadata["timestamp"]


def test_none_is_not_sent_and_a_value_of_no_table_type_is_refused():
    assert to_json({"PartitionKey": "p", "RowKey": "r", "gone": None, "ratio": 1.5}) == \
        '{"PartitionKey": "p", "RowKey": "r", "ratio": 1.5, "ratio@odata.type": "Edm.Double"}'
    with pytest.raises(TypeError, match="big"):
        to_json({"big": 2 ** 31})
    with pytest.raises(TypeError, match="things"):
        to_json({"things": [1, 2]})


def test_a_row_without_an_etag_in_its_body_takes_the_answers_or_its_timestamps():
    row = from_json({"PartitionKey": "p", "RowKey": "r", "Timestamp": "2026-01-02T03:04:05.1234567Z"})
    assert row.metadata == {"etag": "W/\"datetime'2026-01-02T03%3A04%3A05.1234567Z'\"",
                            "timestamp": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)}
    assert from_json({"RowKey": "r"}, etag='W/"x"').metadata["etag"] == 'W/"x"'
