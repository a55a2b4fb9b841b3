"""What a storage request costs against Azure's targets: the partition that serves it, and
how many units (entities for tables, messages for queues, requests for blobs) it counts there.

Azure Table Storage serves each partition (a table's rows of one PartitionKey) from one
partition server, whose target is in entities per second: a point read or a single write is
one entity, an entity group transaction ($batch) as many as it holds (all in one partition),
a query as many as it returns. The account's target counts requests (a $batch is one).
A queue is one partition (its target in messages per second); a blob container is counted
but has no target of its own here (Azure's per-blob figure is for page blobs).

Paths are Azurite's, which carry the account first: `/<account>/<table>(PartitionKey='..',
RowKey='..')`, `/<account>/<queue>/messages`, `/<account>/<container>/<blob>`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

WRITES = {"POST", "PUT", "PATCH", "MERGE", "DELETE"}
SCAN = " (scan)"   # ends the name under which a table's scans are counted

_KEY = r"'((?:[^']|'')*)'"
_ENTITY = re.compile(rf"^([^/(]+)\(PartitionKey={_KEY},RowKey={_KEY}\)$")
_ONE_PARTITION = re.compile(rf"PartitionKey eq {_KEY}")
_SUB_REQUEST = re.compile(rb"^(?:POST|PUT|PATCH|MERGE|DELETE|GET) (\S+) HTTP/1\.1\r?$", re.MULTILINE)
_JSON_PARTITION = re.compile(rb'"PartitionKey"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Charge:
    service: str              # "table", "queue" or "blob"
    partition: str | None     # "<service> <name>" of what serves it; None: the account alone
    units: int                # what it counts on its partition before its answer is known
    limited: bool             # whether that partition has a target of its own
    write: bool               # whether it changes something (so it may land and still time out)
    reads_rows: bool = False  # a table query or a dequeue: its answer's size counts too
    transaction: bool = False # an entity group transaction ($batch)


def of(service: str, method: str, target: str, body: bytes | None) -> Charge:
    """The charge of a request for `target` (path and query, as sent)."""
    parts = urlsplit(target)
    segments = unquote(parts.path).split("/", 2)   # "", account, the rest
    rest = segments[2] if len(segments) > 2 else ""
    write = method in WRITES
    if service == "table":
        return _table(method, rest, parse_qs(parts.query), body or b"", write)
    name = rest.split("/", 1)[0]
    if not name:
        return Charge(service, None, 1, False, write)
    if service == "queue":
        dequeue = method == "GET" and rest.endswith("/messages") and "peekonly=true" not in parts.query.lower()
        return Charge(service, f"queue {name}", 1, True, write, reads_rows=dequeue)
    return Charge(service, f"blob {name}", 1, False, write)


def rows_in(charge: Charge, data: bytes) -> int:
    """How many rows (entities, messages) an answer to a query or a dequeue carries."""
    if charge.service == "queue":
        return data.count(b"<QueueMessage>")
    try:
        return len(json.loads(data).get("value", ()))
    except (ValueError, AttributeError):
        return 0


def _table(method: str, rest: str, query: dict, body: bytes, write: bool) -> Charge:
    if rest == "$batch":
        return _batch(body)
    entity = _ENTITY.match(rest)
    if entity:
        return Charge("table", _partition(entity.group(1), _unescape(entity.group(2))), 1, True, write)
    table = rest.removesuffix("()")
    if not table or table.startswith("Tables"):
        return Charge("table", None, 1, False, write)   # a table created, deleted or listed
    if method == "POST":                                  # an insert: the row says where
        found = _JSON_PARTITION.search(body)
        key = json.loads(b'"' + found.group(1) + b'"') if found else ""
        return Charge("table", _partition(table, key), 1, True, write)
    return _query(table, query.get("$filter", [""])[0])


def _query(table: str, query_filter: str) -> Charge:
    """A query on one partition (its filter names one PartitionKey, with no `or`) counts
    there; any other scans the table, which no single partition's target covers."""
    keys = set(_ONE_PARTITION.findall(query_filter))
    if len(keys) == 1 and " or " not in query_filter:
        return Charge("table", _partition(table, _unescape(keys.pop())), 1, True, False, reads_rows=True)
    return Charge("table", f"table {table}{SCAN}", 1, False, False, reads_rows=True)


def _batch(body: bytes) -> Charge:
    """An entity group transaction: as many entities as it has operations, on their one partition."""
    targets = _SUB_REQUEST.findall(body)
    table, key = "", ""
    if targets:
        path = unquote(urlsplit(targets[0].decode("latin-1")).path).split("/", 2)[-1]
        entity = _ENTITY.match(path)
        table, key = (entity.group(1), _unescape(entity.group(2))) if entity else (path, "")
        if not entity and (found := _JSON_PARTITION.search(body)):
            key = json.loads(b'"' + found.group(1) + b'"')
    return Charge("table", _partition(table, key), max(1, len(targets)), True, True, transaction=True)


def _partition(table: str, key: str) -> str:
    return f"table {table} {key}"


def _unescape(key: str) -> str:
    return key.replace("''", "'")
