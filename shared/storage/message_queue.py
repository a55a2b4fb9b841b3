"""Storage queues carrying JSON messages, encoded as Azure Functions' queue trigger expects.

Messages are hints to do work that the tables describe; handlers look at the rows, so a
message delivered twice, late, or after the work was done by someone else changes nothing.
A message sent with a delay stays invisible until then: that is how the Queue schedules
work for a moment in the future (claim expiry, deadlines) without scanning anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.queue import QueueClient, TextBase64DecodePolicy, TextBase64EncodePolicy

# Azure keeps a message invisible for at most seven days.
MAX_DELAY = timedelta(days=7)


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
    def __init__(self, connection: str, name: str, operation_counter=None, **client_options) -> None:
        # The queue SDK takes no per-call policies; its request hook counts the same requests.
        hook = {"raw_request_hook": operation_counter.on_request} if operation_counter else {}
        self.name = name
        self._client = QueueClient.from_connection_string(
            connection, name, message_encode_policy=TextBase64EncodePolicy(),
            message_decode_policy=TextBase64DecodePolicy(), **hook, **client_options)
        try:
            self._client.create_queue()
        except ResourceExistsError:
            pass

    def send(self, body: dict, delay: timedelta = timedelta(0)) -> SentMessage:
        seconds = max(0, min(int(delay.total_seconds() + 0.999), int(MAX_DELAY.total_seconds()) - 1))
        sent = self._client.send_message(json.dumps(body, separators=(",", ":")),
                                         visibility_timeout=seconds or None, time_to_live=-1)
        return SentMessage(sent.id, sent.pop_receipt)

    def send_raw(self, content: str) -> None:
        """A message of any text: what another sender (or damage) may leave on the queue."""
        self._client.send_message(content, time_to_live=-1)

    def receive(self, count: int, hold: timedelta) -> list[ReceivedMessage]:
        """Up to `count` visible messages, hidden from others for `hold` while handled."""
        pages = self._client.receive_messages(
            messages_per_page=count, max_messages=count, visibility_timeout=int(hold.total_seconds()))
        return [ReceivedMessage(decoded_body(message.content), message.id, message.pop_receipt,
                                message.dequeue_count) for message in pages]

    def delete(self, message: ReceivedMessage | SentMessage) -> None:
        """Delete `message` if it is still as this process last had it: one whose hold (or
        delay) ran out and that another handler received since is theirs now, and stays."""
        try:
            self._client.delete_message(message.message_id, message.pop_receipt)
        except ResourceNotFoundError:
            pass  # already deleted, by its new holder; the work is idempotent
        except HttpResponseError as error:
            if error.error_code != "PopReceiptMismatch":
                raise


def decoded_body(content: str) -> dict | None:
    try:
        body = json.loads(content)
    except (TypeError, ValueError):
        return None
    return body if isinstance(body, dict) else None
