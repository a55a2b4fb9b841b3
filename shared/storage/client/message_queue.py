"""Storage queues carrying JSON messages, encoded as Azure Functions' queue trigger expects,
sent straight over HTTP.

Messages are hints to do work that the tables describe; handlers look at the rows, so a
message delivered twice, late, or after the work was done by someone else changes nothing.
A message sent with a delay stays invisible until then: that is how the Queue schedules
work for a moment in the future (claim expiry, deadlines) without scanning anything.

The requests go over our own kept-alive connections (`connections`), as the tables' do
(`table`), not through azure-storage-queue's pipeline: its two calls per createTask (a hint
sent, then withdrawn) were a quarter of a busy host's Python time (policies, requests,
urllib3, its XML models). A message's text is the base64 of its JSON, as the SDK's
TextBase64EncodePolicy wrote it and as the Functions trigger decodes it. Errors are the SDK's
types: ResourceNotFoundError, ResourceExistsError, else HttpResponseError with the service's
`error_code`.

Every request is sent again while storage is busy or when its answer is lost, because each is
safe to repeat here: a message sent twice is a hint handled twice, a receive repeated leaves
the lost answer's messages hidden until their hold ends, a delete repeated finds nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceExistsError,
                                   ResourceNotFoundError)

from shared.storage.client.connections import Answer, Connections, send_repeating
from shared.storage.client.queue_endpoint import QueueEndpoint
from shared.storage.client.table import Sent

# Azure keeps a message invisible for at most seven days.
MAX_DELAY = timedelta(days=7)
_ENVELOPE = '<?xml version="1.0" encoding="utf-8"?><QueueMessage><MessageText>{}</MessageText></QueueMessage>'
_XML = "application/xml"
_BY_CODE = {"QueueNotFound": ResourceNotFoundError, "MessageNotFound": ResourceNotFoundError,
            "ResourceNotFound": ResourceNotFoundError, "QueueAlreadyExists": ResourceExistsError,
            "QueueBeingDeleted": ResourceExistsError, "InvalidAuthenticationInfo": ClientAuthenticationError,
            "AuthenticationFailed": ClientAuthenticationError}
_BY_STATUS = {404: ResourceNotFoundError, 409: ResourceExistsError, 401: ClientAuthenticationError,
              403: ClientAuthenticationError}


@dataclass(frozen=True)
class ReceivedMessage:
    body: dict | None          # None: not a JSON object (someone else's message, or damaged)
    message_id: str
    pop_receipt: str
    dequeue_count: int


@dataclass(frozen=True)
class SentMessage:
    """A message as sent: what it takes to delete it while it is still hidden by its delay."""
    message_id: str
    pop_receipt: str


class MessageQueue:
    def __init__(self, endpoint: QueueEndpoint, connections: Connections, name: str, counter=None) -> None:
        """The queue `name`, created if missing; `counter` sees each request."""
        self.name = name
        self._endpoint, self._connections, self._counter = endpoint, connections, counter
        self._path = f"{endpoint.base_path}/{name}"
        answer = self._send("PUT", self._path)
        # 204: it exists as asked; 409: it exists with other metadata. Either way it is there.
        if answer.status not in (201, 204) and _error_code(answer) != "QueueAlreadyExists":
            raise _refusal(answer, name)

    def send(self, body: dict, delay: timedelta = timedelta(0)) -> SentMessage:
        seconds = max(0, min(int(delay.total_seconds() + 0.999), int(MAX_DELAY.total_seconds()) - 1))
        return self._put(json.dumps(body, separators=(",", ":")), seconds)

    def send_raw(self, content: str) -> None:
        """A message of any text: what another sender (or damage) may leave on the queue."""
        self._put(content, 0)

    def receive(self, count: int, hold: timedelta) -> list[ReceivedMessage]:
        """Up to `count` visible messages, hidden from others for `hold` while handled."""
        query = {"numofmessages": str(count), "visibilitytimeout": str(int(hold.total_seconds()))}
        answer = self._expect(200, self._send("GET", self._path + "/messages", query))
        return [ReceivedMessage(decoded_body(_decoded_text(message.get("MessageText"))), message["MessageId"],
                                message["PopReceipt"], int(message["DequeueCount"]))
                for message in _messages(answer.data)]

    def delete(self, message: ReceivedMessage | SentMessage) -> None:
        """Delete `message` if it is still as this process last had it: one whose hold (or
        delay) ran out and that another handler received since is theirs now, and stays."""
        answer = self._send("DELETE", f"{self._path}/messages/{quote(message.message_id, safe='')}",
                            {"popreceipt": message.pop_receipt})
        # 404: already deleted, by its new holder (the work is idempotent); a mismatched pop
        # receipt: received by another handler since.
        if answer.status not in (204, 404) and _error_code(answer) != "PopReceiptMismatch":
            raise _refusal(answer, self.name)

    def _put(self, text: str, delay_seconds: int) -> SentMessage:
        query = {"visibilitytimeout": str(delay_seconds)} if delay_seconds else {}
        query["messagettl"] = "-1"   # kept until handled, however long that takes
        body = _ENVELOPE.format(base64.b64encode(text.encode()).decode()).encode()
        answer = self._expect(201, self._send("POST", self._path + "/messages", query, body))
        [sent] = _messages(answer.data)
        return SentMessage(sent["MessageId"], sent["PopReceipt"])

    def _send(self, method: str, path: str, query: dict[str, str] | None = None, body: bytes | None = None) -> Answer:
        """One request, counted once, sent again while storage is busy or its answer is lost
        (safe for every request here: see the module's docstring)."""
        query = query or {}
        target = self._endpoint.target(path, query)
        if self._counter is not None:
            self._counter.on_request(Sent(method, self._endpoint.origin + target))
        if body is None and method != "GET":
            body = b""   # a PUT or DELETE says Content-Length: 0, as the SDK's did
        content_type = _XML if body else ""

        def signed() -> dict[str, str]:
            headers = self._endpoint.headers(method, path, query, len(body or b""), content_type)
            return {**headers, "Content-Type": content_type} if content_type else headers
        return send_repeating(self._connections, method, target, body, signed, repeatable=True)

    def _expect(self, status: int, answer: Answer) -> Answer:
        if answer.status == status:
            return answer
        raise _refusal(answer, self.name)


def decoded_body(content: str | None) -> dict | None:
    try:
        body = json.loads(content)
    except (TypeError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _decoded_text(text: str | None) -> str | None:
    """A message's text from its base64; None if it is not base64 of UTF-8 text (not ours)."""
    try:
        return base64.b64decode(text or "", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _messages(data: bytes) -> list[dict[str, str]]:
    """The messages of a QueueMessagesList, each as its elements' texts by tag."""
    return [{field.tag: field.text or "" for field in message} for message in ElementTree.fromstring(data)]


def _error_code(answer: Answer) -> str | None:
    return answer.headers.get("x-ms-error-code") or _error_detail(answer.data, "Code")


def _error_detail(data: bytes, tag: str) -> str | None:
    """An element of the service's XML error, if the answer holds one."""
    try:
        return ElementTree.fromstring(data).findtext(tag) if data else None
    except ElementTree.ParseError:
        return None


def _refusal(answer: Answer, queue_name: str) -> HttpResponseError:
    """Storage's refusal as the SDK raises it."""
    code = _error_code(answer)
    detail = _error_detail(answer.data, "Message") or f"{answer.status} {answer.reason}"
    kind = _BY_CODE.get(code) or _BY_STATUS.get(answer.status, HttpResponseError)
    refusal = kind(message=f"{queue_name}: {detail}\nErrorCode:{code}")
    refusal.status_code, refusal.reason, refusal.error_code = answer.status, answer.reason, code
    return refusal
