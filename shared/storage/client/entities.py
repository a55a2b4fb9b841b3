"""A row as the Table service's JSON has it, both ways, and the path that names a row.

The value types are the SDK's own (its serializer and deserializer): a row read back is a
`TableEntity` whose `metadata` holds its `etag` and `timestamp`, with the same Python types
the SDK gives. A row of strings, booleans and 32-bit integers only (nearly every row the
adapters write) is sent as plain JSON, which the service reads as those types untagged.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from azure.data.tables import TableEntity
from azure.data.tables._deserialize import _convert_to_entity   # the SDK's reading of a row
from azure.data.tables._serialize import _add_entity_properties   # and its typing of one

_INT32 = range(-2 ** 31, 2 ** 31)


def to_json(row: dict) -> str:
    if all(isinstance(value, (str, bool)) or (type(value) is int and value in _INT32) for value in row.values()):
        return json.dumps(row)
    return json.dumps(_add_entity_properties(row))


def from_json(item: dict, etag: str | None = None) -> TableEntity:
    """A row of an answer; `etag` from the answer's header when the body carries none."""
    entity = _convert_to_entity(item)
    if etag and not entity.metadata.get("etag"):
        entity.metadata["etag"] = etag
    return entity


def row_path(table_path: str, partition_key: str, row_key: str) -> str:
    """`<table>(PartitionKey='..',RowKey='..')`, keys quoted as the service reads them."""
    def key(value: str) -> str:
        if not isinstance(value, str):
            raise TypeError("PartitionKey and RowKey must be strings")
        return quote(value.replace("'", "''"), safe="")
    return f"{table_path}(PartitionKey='{key(partition_key)}',RowKey='{key(row_key)}')"
