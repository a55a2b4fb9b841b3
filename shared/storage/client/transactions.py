"""Entity group transactions (`$batch`): the request's body and the reading of its answer.

The SDK builds a transaction's multipart body with Python's `email` package and parses the
answer with it too; profiled while a 3,000-task graph was created, that was a quarter of
the host's CPU (the host is what limits graph creation here). The body is simple text:
one changeset of `PATCH` (upsert, merged, as `upsert_entity` does; or merged if unchanged
since an ETag) `POST` (insert) and `DELETE` (any version) requests, each answered by a
status line. `Table.submit_transaction` sends it.
"""

from __future__ import annotations

import json
import re

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.data.tables import RequestTooLargeError, TableTransactionError

from shared.storage.client.entities import row_path, to_json
from shared.storage.client.unique_ids import unique_id

# Answers refusing a transaction whole, as the SDK raises them (a batch over 4 MiB is a
# TableTransactionError, so that writers sharing it are sent again one by one).
_REFUSED_WHOLE = {413: RequestTooLargeError, 404: ResourceNotFoundError, 409: ResourceExistsError}
_STATUS = re.compile(rb"^HTTP/1\.1 (\d{3})", re.MULTILINE)
_ETAG = re.compile(rb"^ETag: *(\S+)", re.MULTILINE | re.IGNORECASE)
_METHODS = {"upsert": "PATCH", "delete": "DELETE", "create": "POST", "update": "PATCH"}
_ERROR = re.compile(rb'"code"\s*:\s*"([^"]*)".*?"value"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL)


def body(table_url: str, version: str, operations: list[tuple]) -> tuple[str, bytes]:
    """(content type, body) of a transaction of operations on the table at `table_url`:
    ("upsert", row), ("delete", row), ("create", row), ("update", row, {"etag": ...}),
    as the SDK's `submit_transaction` takes them."""
    batch, changeset = f"batch_{unique_id()}", f"changeset_{unique_id()}"
    parts = [f"--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n"]
    for index, operation in enumerate(operations):
        parts.append(f"--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
                     f"Content-ID: {index}\r\n\r\n" + _operation(table_url, version, operation))
    parts.append(f"--{changeset}--\r\n\r\n--{batch}--\r\n")
    return f"multipart/mixed; boundary={batch}", "".join(parts).encode()


def outcome(status: int, reason: str, answer: bytes) -> list[dict]:
    """Each operation's answer ({"etag": ...} for a write), or the error storage refused
    the transaction with (TableTransactionError if it refused one operation: none is applied)."""
    if status != 202:
        error = _REFUSED_WHOLE.get(status, HttpResponseError)(
            message=f"transaction answered HTTP {status}: {answer[:500].decode(errors='replace')}")
        error.status_code, error.reason = status, reason
        raise error
    _check(answer)
    return [{"etag": etag.decode()} if etag else {} for etag in _etags(answer)]


def _operation(table_url: str, version: str, operation: tuple) -> str:
    kind, row, *options = operation
    if kind not in _METHODS:
        raise ValueError(f"transactions send {', '.join(_METHODS)}, not {kind!r}")
    path = table_url if kind == "create" else row_path(table_url, row["PartitionKey"], row["RowKey"])
    head = (f"{_METHODS[kind]} {path} HTTP/1.1\r\n"
            f"x-ms-version: {version}\r\nDataServiceVersion: 3.0\r\nAccept: application/json;odata=minimalmetadata\r\n")
    if kind == "create":
        head += "Prefer: return-no-content\r\n"
    if kind == "update":
        head += f"If-Match: {options[0]['etag']}\r\n"
    if kind == "delete":   # unconditional unless given the row's ETag, as `delete_entity`
        return head + f"If-Match: {(options[0].get('etag') if options else None) or '*'}\r\n\r\n\r\n"
    data = to_json(row)
    return head + f"Content-Type: application/json\r\nContent-Length: {len(data.encode())}\r\n\r\n{data}\r\n"


def _etags(answer: bytes) -> list[bytes | None]:
    """Each operation's ETag, in order (None for a delete's answer, which has none)."""
    starts = [status.start() for status in _STATUS.finditer(answer)] + [len(answer)]
    return [(found.group(1) if (found := _ETAG.search(answer, start, end)) else None)
            for start, end in zip(starts, starts[1:])]


def _check(answer: bytes) -> None:
    """Raise TableTransactionError for the first operation storage refused."""
    for status in _STATUS.finditer(answer):
        if not 200 <= int(status.group(1)) < 300:
            found = _ERROR.search(answer, status.end())
            code, message = (found.group(1).decode(), json.loads(b'"' + found.group(2) + b'"')) if found \
                else ("", answer[status.start():status.start() + 300].decode(errors="replace"))
            error = TableTransactionError(message=message)
            error.error_code = code
            raise error
