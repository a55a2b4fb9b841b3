"""Azure Storage's error answers, as each service writes them: the Table service an OData
JSON error, the Queue and Blob services an XML `<Error>`; every one with its code in
`x-ms-error-code` and its message ending in the request's id and time, as Azure's do. The
codes and messages are those of Azure's "Common REST API error codes"."""

from __future__ import annotations

import email.utils
import json
import uuid
from datetime import datetime, timezone
from xml.sax.saxutils import escape

BUSY = (503, "Server Busy", "ServerBusy")
TIMED_OUT = (500, "Operation could not be completed within the specified time.", "OperationTimedOut")
TIMED_OUT_MESSAGE = "The operation could not be completed within the permitted time."
_SERVERS = {"table": "Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0",
            "queue": "Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0",
            "blob": "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0"}


def error(service: str, kind: tuple[int, str, str], message: str, version: str | None,
          head_only: bool = False) -> bytes:
    """The whole answer (status line, headers, body) of an error of `kind` (BUSY, TIMED_OUT)."""
    status, reason, code = kind
    request_id = str(uuid.uuid4())
    text = f"{message}\nRequestId:{request_id}\nTime:{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%S.%f}0Z"
    if service == "table":
        content_type = "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
        body = json.dumps({"odata.error": {"code": code, "message": {"lang": "en-US", "value": text}}}).encode()
    else:
        content_type = "application/xml"
        body = (f'\ufeff<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
                f"<Message>{escape(text)}</Message></Error>").encode()
    headers = {"Content-Length": str(len(body)), "Content-Type": content_type, "Server": _SERVERS[service],
               "x-ms-request-id": request_id, "x-ms-error-code": code,
               "Date": email.utils.formatdate(usegmt=True)}
    if version:
        headers["x-ms-version"] = version
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (head + "\r\n").encode("latin-1") + (b"" if head_only else body)
