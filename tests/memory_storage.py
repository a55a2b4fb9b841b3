"""An in-memory storage account: the port the services use (`StorageAccount.table` and
`.queue`), kept in this process, for service tests that run in seconds.

It keeps the semantics the Queue relies on, which `tests/storage/test_contract.py` holds it
to, side by side with Azurite: every write changes the row's ETag; an insert of an existing
row, a conditional write on a changed row and an update or delete of a missing row are
refused with the SDK's own exceptions; a transaction is atomic, one partition, at most 100
operations, each row once; queries see rows in key order and understand the filters the
adapters write (conjunctions of `<property> <eq|ne|gt|ge|lt|le> <@parameter|'literal'>`).
Queues hide a received message for its hold, count deliveries and delay sent messages.
Blob containers (`MemoryBlobStore`) keep bytes, content types and one staged block per blob,
and hand out `memory://` URLs, through which a test uploads with `upload_to` and
`stage_block_at` what a client would PUT to them. Every request is counted by the same
`OPERATIONS` counter as the real clients.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableEntity, TableTransactionError, UpdateMode

from shared.storage.client.account import OPERATIONS, OperationCounter
from shared.storage.client.blobs import MAX_BATCH
from shared.storage.client.message_queue import ReceivedMessage, SentMessage, decoded_body

MAX_TRANSACTION = 100
_CLAUSE = re.compile(r"^\s*(\w+)\s+(eq|ne|gt|ge|lt|le)\s+(@\w+|'(?:[^']|'')*'|-?\d+)\s*$")
_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


class MemoryAccount:
    """Tables and queues by name, as `StorageAccount` hands them out."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.connection = "memory"
        self._tables: dict[str, MemoryTable] = {}
        self._queues: dict[str, MemoryQueue] = {}
        self._containers: dict[str, MemoryBlobStore] = {}
        self._lock = threading.Lock()

    def table(self, name: str) -> MemoryTable:
        with self._lock:
            return self._tables.setdefault(name, MemoryTable(self.prefix + name))

    def queue(self, name: str) -> MemoryQueue:
        with self._lock:
            return self._queues.setdefault(name, MemoryQueue(name))

    def blobs(self, container: str) -> MemoryBlobStore:
        with self._lock:
            return self._containers.setdefault(container, MemoryBlobStore(container))


class MemoryTable:
    """The subset of `azure.data.tables.TableClient` the adapters call."""

    def __init__(self, name: str) -> None:
        self.table_name = name
        self._rows: dict[tuple[str, str], dict] = {}
        self._etags: dict[tuple[str, str], str] = {}
        self._lock = threading.RLock()

    # -- single-row operations ------------------------------------------------------------
    def create_table(self) -> None:
        OPERATIONS.on_request(None)
        raise ResourceExistsError("the table exists")

    def get_entity(self, partition_key: str, row_key: str, select: list[str] | None = None, **_) -> TableEntity:
        OPERATIONS.on_request(None)
        with self._lock:
            key = (partition_key, row_key)
            if key not in self._rows:
                raise ResourceNotFoundError(f"{partition_key}/{row_key} not found")
            return self._entity(key, select)

    def create_entity(self, entity: dict, **_) -> dict:
        OPERATIONS.on_request(None)
        with self._lock:
            return self._create(entity)

    def upsert_entity(self, entity: dict, mode: UpdateMode = UpdateMode.MERGE, **_) -> dict:
        OPERATIONS.on_request(None)
        with self._lock:
            return self._upsert(entity, mode)

    def update_entity(self, entity: dict, mode: UpdateMode = UpdateMode.MERGE, etag: str | None = None,
                      match_condition: MatchConditions | None = None, **_) -> dict:
        OPERATIONS.on_request(None)
        with self._lock:
            return self._update(entity, mode, etag if match_condition == MatchConditions.IfNotModified else None)

    def delete_entity(self, partition_key: str, row_key: str, etag: str | None = None,
                      match_condition: MatchConditions | None = None, **_) -> None:
        OPERATIONS.on_request(None)
        with self._lock:
            if (partition_key, row_key) in self._rows:   # the SDK answers a missing row's 404 with None
                self._delete((partition_key, row_key),
                             etag if match_condition == MatchConditions.IfNotModified else None)

    # -- queries ------------------------------------------------------------------------------
    def query_entities(self, query_filter: str, parameters: dict | None = None, select: list[str] | None = None,
                       results_per_page: int | None = None, **_):
        """Matching rows in key order, fetched a page (`results_per_page`, at most 1,000) per
        counted request, as the SDK's pager does."""
        match = _filter(query_filter, parameters or {})
        page = min(results_per_page or 1000, 1000)
        with self._lock:
            keys = sorted(key for key, row in self._rows.items() if match(row))
        for start in itertools.count(0, page):
            OPERATIONS.on_request(None)
            with self._lock:
                chunk = [self._entity(key, select) for key in keys[start:start + page] if key in self._rows]
            yield from chunk
            if start + page >= len(keys):
                return

    def list_entities(self, **kwargs):
        return self.query_entities("", **kwargs)

    # -- transactions -------------------------------------------------------------------------
    def submit_transaction(self, operations) -> list[dict]:
        OPERATIONS.on_request(None)
        operations = list(operations)
        if not operations or len(operations) > MAX_TRANSACTION:
            raise TableTransactionError(message=f"a transaction holds 1 to {MAX_TRANSACTION} operations")
        keys = [(entity["PartitionKey"], entity["RowKey"]) for _, entity, *_ in operations]
        if len({partition for partition, _ in keys}) != 1 or len(set(keys)) != len(keys):
            raise TableTransactionError(message="one partition, each row once, per transaction")
        with self._lock:
            saved = (dict(self._rows), dict(self._etags))
            try:
                return [self._apply(operation) for operation in operations]
            except (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError) as refused:
                self._rows, self._etags = saved
                raise TableTransactionError(message=f"transaction refused: {refused}") from None

    def _apply(self, operation) -> dict:
        kind, entity, *rest = operation
        options = rest[0] if rest else {}
        key = (entity["PartitionKey"], entity["RowKey"])
        if kind == "create":
            return self._create(entity)
        if kind == "upsert":
            return self._upsert(entity, options.get("mode", UpdateMode.MERGE))
        if kind == "update":
            etag = options.get("etag") if options.get("match_condition") == MatchConditions.IfNotModified else None
            return self._update(entity, options.get("mode", UpdateMode.MERGE), etag)
        if kind == "delete":
            etag = options.get("etag") if options.get("match_condition") == MatchConditions.IfNotModified else None
            self._delete(key, etag)
            return {}
        raise ValueError(f"unknown transaction operation {kind!r}")

    # -- the rows themselves (called with the lock held) -------------------------------------
    def _create(self, entity: dict) -> dict:
        key = (entity["PartitionKey"], entity["RowKey"])
        if key in self._rows:
            raise ResourceExistsError(f"{key[0]}/{key[1]} exists")
        return self._store(key, _properties(entity))

    def _upsert(self, entity: dict, mode: UpdateMode) -> dict:
        key = (entity["PartitionKey"], entity["RowKey"])
        base = self._rows.get(key, {}) if mode == UpdateMode.MERGE else {}
        return self._store(key, {**base, **_properties(entity)})

    def _update(self, entity: dict, mode: UpdateMode, etag: str | None) -> dict:
        key = (entity["PartitionKey"], entity["RowKey"])
        if key not in self._rows:
            raise ResourceNotFoundError(f"{key[0]}/{key[1]} not found")
        if etag is not None and etag != self._etags[key]:
            raise ResourceModifiedError(f"{key[0]}/{key[1]} changed since {etag}")
        return self._upsert(entity, mode)

    def _delete(self, key: tuple[str, str], etag: str | None) -> None:
        if key not in self._rows:
            raise ResourceNotFoundError(f"{key[0]}/{key[1]} not found")
        if etag is not None and etag != self._etags[key]:
            raise ResourceModifiedError(f"{key[0]}/{key[1]} changed since {etag}")
        del self._rows[key], self._etags[key]

    def _store(self, key: tuple[str, str], properties: dict) -> dict:
        etag = f'W/"datetime\'{uuid.uuid4().hex}\'"'
        self._rows[key] = {**properties, "PartitionKey": key[0], "RowKey": key[1],
                           "Timestamp": datetime.now(timezone.utc)}
        self._etags[key] = etag
        return {"etag": etag}

    def _entity(self, key: tuple[str, str], select: list[str] | None) -> TableEntity:
        row = self._rows[key]
        entity = TableEntity({name: copy.deepcopy(value) for name, value in row.items()
                              if name != "Timestamp" and (select is None or name in select)})
        entity._metadata = {"etag": self._etags[key], "timestamp": row["Timestamp"]}
        return entity


def _properties(entity: dict) -> dict:
    """What storage keeps of an entity: JSON-like values (it refuses nothing we send)."""
    return {name: copy.deepcopy(value) for name, value in entity.items()}


def _filter(query: str, parameters: dict):
    """A predicate for the conjunctions of comparisons the adapters write."""
    if not query.strip():
        return lambda row: True
    clauses = []
    for text in re.split(r"\s+and\s+", query.strip()):
        clause = _CLAUSE.match(text)
        if clause is None:
            raise ValueError(f"the in-memory table does not understand the filter {text!r}")
        name, operator, operand = clause.groups()
        if operand.startswith("@"):
            value = parameters[operand[1:]]
        else:
            value = operand[1:-1].replace("''", "'") if operand.startswith("'") else int(operand)
        clauses.append((name, _COMPARE[operator], value))
    return lambda row: all(name in row and compare(row[name], value) for name, compare, value in clauses)


@dataclass
class _Message:
    message_id: str
    content: str
    visible_at: float
    pop_receipt: str = ""
    dequeue_count: int = 0


class MemoryQueue:
    """The subset of `MessageQueue` the services call, kept in this process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._messages: list[_Message] = []
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def send(self, body: dict, delay: timedelta = timedelta(0)) -> SentMessage:
        OPERATIONS.on_request(None)
        with self._lock:
            message = _Message(str(next(self._ids)), json.dumps(body),
                               time.monotonic() + max(0.0, delay.total_seconds()), uuid.uuid4().hex)
            self._messages.append(message)
        return SentMessage(message.message_id, message.pop_receipt)

    def send_raw(self, content: str) -> None:
        """A message that is not ours (for tests of damaged messages)."""
        OPERATIONS.on_request(None)
        with self._lock:
            self._messages.append(_Message(str(next(self._ids)), content, time.monotonic()))

    def receive(self, count: int, hold: timedelta) -> list[ReceivedMessage]:
        OPERATIONS.on_request(None)
        now = time.monotonic()
        with self._lock:
            visible = [message for message in self._messages if message.visible_at <= now][:count]
            for message in visible:
                message.visible_at = now + hold.total_seconds()
                message.pop_receipt = uuid.uuid4().hex
                message.dequeue_count += 1
            return [ReceivedMessage(decoded_body(message.content), message.message_id, message.pop_receipt,
                                    message.dequeue_count) for message in visible]

    def delete(self, message: ReceivedMessage | SentMessage) -> None:
        OPERATIONS.on_request(None)
        with self._lock:
            self._messages = [kept for kept in self._messages
                              if (kept.message_id, kept.pop_receipt) != (message.message_id, message.pop_receipt)]



class MemoryBlobStore:
    """The blob port (`shared.storage.client.blobs.AzureBlobStore`), kept in this process."""

    def __init__(self, container: str, counter: OperationCounter = OPERATIONS) -> None:
        self.container = container
        self._counter = counter   # what its requests are counted by
        self._blobs: dict[str, tuple[bytes, str]] = {}
        self._blocks: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes, content_type: str) -> None:
        self._counter.on_request(None)
        with self._lock:
            self._blobs[key] = (bytes(data), content_type)
            self._blocks.pop(key, None)

    def read(self, key: str) -> bytes | None:
        self._counter.on_request(None)
        with self._lock:
            return self._blobs[key][0] if key in self._blobs else None

    def content_type(self, key: str) -> str | None:
        with self._lock:
            return self._blobs[key][1] if key in self._blobs else None

    def size(self, key: str) -> int | None:
        self._counter.on_request(None)
        with self._lock:
            return len(self._blobs[key][0]) if key in self._blobs else None

    def delete(self, key: str) -> None:
        self._counter.on_request(None)
        with self._lock:
            self._blobs.pop(key, None)
            self._blocks.pop(key, None)

    def delete_many(self, keys: list[str]) -> None:
        for start in range(0, len(keys), MAX_BATCH):
            self._counter.on_request(None)
            with self._lock:
                for key in keys[start:start + MAX_BATCH]:
                    self._blobs.pop(key, None)
                    self._blocks.pop(key, None)

    def keys(self, prefix: str) -> list[str]:
        self._counter.on_request(None)
        with self._lock:
            return sorted(key for key in self._blobs if key.startswith(prefix))

    def commit_block(self, key: str, content_type: str) -> int | None:
        self._counter.on_request(None)
        with self._lock:
            if key in self._blocks:
                self._blobs[key] = (self._blocks.pop(key), content_type)
            return len(self._blobs[key][0]) if key in self._blobs else None

    def upload_url(self, key: str, content_type: str, content_length: int, expires: datetime) -> tuple[str, dict]:
        return (self._url("put", key, expires),
                {"x-ms-blob-type": "BlockBlob", "Content-Type": content_type, "Content-Length": str(content_length)})

    def block_upload_url(self, key: str, expires: datetime) -> str:
        return self._url("block", key, expires)

    def download_url(self, key: str, expires: datetime) -> str:
        return self._url("get", key, expires)

    def _url(self, use: str, key: str, expires: datetime) -> str:
        return f"memory://{self.container}/{quote(key)}?use={use}&se={expires.timestamp()}"

    # -- what a client does with the URLs -----------------------------------------------------
    def upload_to(self, url: str, data: bytes, headers: dict) -> None:
        """A PUT to an `upload_url`, with the headers it came with."""
        key = self._key(url, "put")
        self.put(key, data, headers["Content-Type"])

    def stage_block_at(self, url: str, data: bytes) -> None:
        """A plain PUT to a `block_upload_url`."""
        key = self._key(url, "block")
        with self._lock:
            self._blocks[key] = bytes(data)

    def read_at(self, url: str) -> bytes | None:
        """A GET of a `download_url`."""
        return self.read(self._key(url, "get"))

    def _key(self, url: str, use: str) -> str:
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        assert parts.scheme == "memory" and parts.netloc == self.container and query["use"] == use, url
        assert float(query["se"]) > time.time(), f"{url} expired"
        return unquote(parts.path[1:])
