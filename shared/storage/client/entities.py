"""A row as the Table service's JSON has it, both ways, and the path that names a row.

The value types are the SDK's public ones, as its clients give and take them: strings,
booleans, 32-bit integers, floats (Edm.Double), `datetime` (Edm.DateTime, UTC), `UUID`
(Edm.Guid), `bytes` (Edm.Binary), and `EntityProperty(value, EdmType.INT64)` for a 64-bit
integer. A row of strings, booleans and 32-bit integers only (nearly every row the adapters
write) is sent as plain JSON, which the service reads as those types untagged; any other
value goes with its `@odata.type`. A row read back is a `Row`: its properties, and its
`metadata` (`etag`, `timestamp`) as the SDK's `TableEntity` has them.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from datetime import datetime, timezone
from enum import Enum
from urllib.parse import quote

from azure.data.tables import EdmType, EntityProperty

_INT32 = range(-2 ** 31, 2 ** 31)
_INT64 = range(-2 ** 63, 2 ** 63)
_TYPE = "@odata.type"


class Row(dict):
    """A row read back: its properties by name, and `metadata` ({"etag", "timestamp"})."""

    def __init__(self, properties: dict, metadata: dict) -> None:
        super().__init__(properties)
        self.metadata = metadata


def to_json(row: dict) -> str:
    if all(isinstance(value, (str, bool)) or (type(value) is int and value in _INT32) for value in row.values()):
        return json.dumps(row)
    typed: dict = {}
    for name, value in row.items():
        edm, value = _typed(name, value)
        if value is None:
            continue
        typed[name] = value
        if edm is not None:
            typed[name + _TYPE] = edm.value
    return json.dumps(typed)


def _typed(name: str, value) -> tuple[EdmType | None, object]:
    """(its Edm type if it must be said, its JSON value) of a property; (None, None): not sent."""
    if isinstance(value, EntityProperty) or (isinstance(value, tuple) and len(value) == 2):
        if value[0] is None:
            return None, None
        return _as(EdmType(value[1]), value[0], name)
    if value is None or isinstance(value, (bool, str)):
        return None, value
    if isinstance(value, Enum):
        return None, str(value.value)
    for kind, edm in ((int, EdmType.INT32), (float, EdmType.DOUBLE), (datetime, EdmType.DATETIME),
                      (uuid.UUID, EdmType.GUID), (bytes, EdmType.BINARY)):
        if isinstance(value, kind):
            typed = _as(edm, value, name)
            return (None, typed[1]) if edm is EdmType.INT32 else typed
    raise TypeError(f"property {name!r}: a {type(value).__name__} is not a Table service type")


def _as(edm: EdmType, value, name: str) -> tuple[EdmType, object]:
    if edm in (EdmType.INT32, EdmType.INT64):
        if int(value) not in (_INT32 if edm is EdmType.INT32 else _INT64):
            raise TypeError(f"property {name!r}: {value} does not fit {edm.value}")
        return edm, int(value) if edm is EdmType.INT32 else str(int(value))
    if edm is EdmType.DOUBLE:
        value = float(value)
        return edm, value if math.isfinite(value) else ("NaN" if math.isnan(value) else
                                                        "Infinity" if value > 0 else "-Infinity")
    if edm is EdmType.DATETIME:
        if isinstance(value, str):
            return edm, value
        utc = value.astimezone(timezone.utc) if value.tzinfo else value
        return edm, utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if edm is EdmType.BINARY:
        return edm, base64.b64encode(value).decode()
    return edm, str(value)   # GUID, STRING, BOOLEAN as text


def from_json(item: dict, etag: str | None = None) -> Row:
    """A row of an answer; `etag` from the answer's header when the body carries none."""
    properties, types, odata = {}, {}, {}
    for name, value in item.items():
        if name.startswith("odata."):
            odata[name[6:]] = value
        elif name.endswith(_TYPE):
            types[name[:-len(_TYPE)]] = value
        else:
            properties[name] = value
    timestamp = properties.pop("Timestamp", None)
    row = {name: _value(value, types.get(name)) for name, value in properties.items()}
    etag = odata.get("etag") or etag
    if timestamp and not etag:
        etag = "W/\"datetime'" + quote(timestamp) + "'\""
    return Row(row, {"etag": etag, "timestamp": _datetime(timestamp) if timestamp else None})


def _value(value, edm: str | None):
    if edm is None:
        if type(value) is int and value not in _INT32:
            return EntityProperty(value, EdmType.INT64)
        return value
    if edm == EdmType.INT64.value:
        return EntityProperty(int(value), EdmType.INT64)
    if edm == EdmType.DOUBLE.value:
        return float(value)
    if edm == EdmType.DATETIME.value:
        return _datetime(value)
    if edm == EdmType.GUID.value:
        return uuid.UUID(value)
    if edm == EdmType.BINARY.value:
        return base64.b64decode(value)
    return value


def _datetime(text: str) -> datetime:
    """The service's ISO 8601 UTC time (up to seven decimals, which Python keeps six of)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    parsed = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return parsed.replace(microsecond=int((fraction + "000000")[:6])) if fraction else parsed


def row_path(table_path: str, partition_key: str, row_key: str) -> str:
    """`<table>(PartitionKey='..',RowKey='..')`, keys quoted as the service reads them."""
    def key(value: str) -> str:
        if not isinstance(value, str):
            raise TypeError("PartitionKey and RowKey must be strings")
        return quote(value.replace("'", "''"), safe="")
    return f"{table_path}(PartitionKey='{key(partition_key)}',RowKey='{key(row_key)}')"
