"""Entity group transactions (`$batch`), written and read here instead of by the SDK.

The SDK builds a transaction's multipart body with Python's `email` package and parses the
answer with it too; profiled while a 3,000-task graph was created, that was a quarter of
the host's CPU (the host is what limits graph creation here). The body is simple text:
one changeset of `PATCH` (upsert, merged, as `upsert_entity` does) and `DELETE` (any
version) requests, each answered by a status line. It is sent through the table client's
own pipeline, so it is signed, counted and resent when lost as any other request.

Only what the storage adapters write goes this way: string, bool and 32-bit int columns.
A row with anything else, and a client that is not the SDK's (the in-memory fake, a test's
counting wrapper), goes through the SDK's `submit_transaction`.
"""

from __future__ import annotations

import json
import re
import uuid
from urllib.parse import quote

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.core.rest import HttpRequest
from azure.data.tables import RequestTooLargeError, TableClient, TableTransactionError

_INT32 = range(-2 ** 31, 2 ** 31)
# Answers refusing a transaction whole, as the SDK raises them (a batch over 4 MiB is a
# TableTransactionError, so that writers sharing it are sent again one by one).
_REFUSED_WHOLE = {413: RequestTooLargeError, 404: ResourceNotFoundError, 409: ResourceExistsError}
_STATUS = re.compile(rb"^HTTP/1\.1 (\d{3})", re.MULTILINE)
_ETAG = re.compile(rb"^ETag: *(\S+)", re.MULTILINE | re.IGNORECASE)
_METHODS = {"upsert": "PATCH", "delete": "DELETE", "create": "POST", "update": "PATCH"}
_ERROR = re.compile(rb'"code"\s*:\s*"([^"]*)".*?"value"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL)


def submit(table, operations: list[tuple]) -> list[dict]:
    """Send operations of one partition as one transaction: ("upsert", row) (merged),
    ("delete", row) (any version), ("create", row) (refused if it exists), ("update", row,
    {"etag": ...}) (merged, refused unless the row is at that ETag), as the SDK takes them;
    each one's answer ({"etag": ...} for a write). Raises TableTransactionError if storage
    refused any (none is then applied)."""
    if not isinstance(table, TableClient) or not all(_plain(operation[1]) for operation in operations):
        return table.submit_transaction(operations)
    batch, changeset = f"batch_{uuid.uuid4()}", f"changeset_{uuid.uuid4()}"
    base = f"{table.scheme}://{table._primary_hostname}"   # noqa: SLF001 (the client's own endpoint)
    parts = [f"--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n"]
    for index, operation in enumerate(operations):
        parts.append(f"--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
                     f"Content-ID: {index}\r\n\r\n" + _operation(base, table.table_name, table.api_version, operation))
    parts.append(f"--{changeset}--\r\n\r\n--{batch}--\r\n")
    request = HttpRequest("POST", f"{base}/$batch", content="".join(parts).encode(), headers={
        "x-ms-version": table.api_version, "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0;NetFx",
        "Content-Type": f"multipart/mixed; boundary={batch}", "Accept": "application/json"})
    response = table._client._client.send_request(request, stream=True)   # noqa: SLF001 (its pipeline; not decoded)
    answer = response.read()
    if response.status_code != 202:
        error_type = _REFUSED_WHOLE.get(response.status_code, HttpResponseError)
        raise error_type(message=f"transaction answered HTTP {response.status_code}: "
                                 f"{answer[:500].decode(errors='replace')}", response=response)
    _check(answer)
    return [{"etag": etag.decode()} if etag else {} for etag in _etags(answer)]


def _plain(row: dict) -> bool:
    return all(isinstance(value, (str, bool)) or (type(value) is int and value in _INT32) for value in row.values())


def _operation(base: str, table_name: str, version: str, operation: tuple) -> str:
    kind, row, *options = operation
    if kind not in _METHODS:
        raise ValueError(f"transactions send {', '.join(_METHODS)}, not {kind!r}")
    keys = ",".join(f"{name}='{quote(row[name].replace(chr(39), chr(39) * 2), safe='')}'"
                    for name in ("PartitionKey", "RowKey"))
    path = f"{base}/{table_name}" if kind == "create" else f"{base}/{table_name}({keys})"
    head = (f"{_METHODS[kind]} {path} HTTP/1.1\r\n"
            f"x-ms-version: {version}\r\nDataServiceVersion: 3.0\r\nAccept: application/json;odata=minimalmetadata\r\n")
    if kind == "create":
        head += "Prefer: return-no-content\r\n"
    if kind == "update":
        head += f"If-Match: {options[0]['etag']}\r\n"
    if kind == "delete":
        return head + "If-Match: *\r\n\r\n\r\n"
    body = {}
    for name, value in row.items():
        body[name] = value
        if isinstance(value, str):
            body[name + "@odata.type"] = "Edm.String"
    data = json.dumps(body)
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
