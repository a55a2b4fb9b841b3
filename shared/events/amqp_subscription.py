"""One AMQP queue bound to the Queue's exchanges, and the ways to read it: the one
subscription mechanism on the server's side of the packaging boundary.

Used by the browser's event feeds (`amqp_feed.py`), by `python -m shared.events listen`
(`listen.py`) and by the tests' and benchmarks' consumer (`tests/events/amqp_consumer.py`).
`taskq/events.py` keeps a small one of its own: the command line and the worker install
from `pyproject.toml` without `shared` (which is the Function App's, `.funcignore`), so
they cannot import this module, and this module must not import theirs either.

A subscription is one connection and one channel (pika's connections are not thread-safe:
one thread uses a subscription, then closes it). Exchanges are declared before binding, as
the Queue declares them, so a subscriber may come before the first event.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

import pika
from pika.exceptions import ChannelClosedByBroker

from shared.events.amqp import CONNECT_TIMEOUT, REPLY_TIMEOUT

LINGER = 0.05   # seconds a read waits for more once the first event came (a burst is answered together)
NOT_FOUND = 404  # AMQP's reply code for a queue that does not exist


def connection_parameters(url: str) -> pika.URLParameters:
    parameters = pika.URLParameters(url)
    parameters.connection_attempts = 1
    parameters.socket_timeout = CONNECT_TIMEOUT
    parameters.blocked_connection_timeout = REPLY_TIMEOUT
    parameters.heartbeat = 0   # a reader that waits between reads could not answer them
    return parameters


class QueueGone(Exception):
    """The subscription's queue does not exist (never made, or expired)."""


@dataclass(frozen=True)
class Delivery:
    """A message as a consumer receives it."""

    exchange: str
    routing_key: str
    body: dict
    message_id: str | None
    cc: tuple[str, ...]
    content_type: str | None
    persistent: bool

    @property
    def name(self) -> str:
        """The exchange's short name (`task-completed`)."""
        return self.exchange.rsplit("/", 1)[-1]

    def as_json(self) -> dict:
        return {"exchange": self.exchange, "routingKey": self.routing_key, "messageId": self.message_id,
                "cc": list(self.cc), "payload": self.body}


def _delivery(method, properties, body: bytes) -> Delivery:
    return Delivery(method.exchange, method.routing_key, json.loads(body), properties.message_id,
                    tuple((properties.headers or {}).get("CC", [])), properties.content_type,
                    properties.delivery_mode == 2)


class AmqpSubscription:
    def __init__(self, connection, channel, queue: str) -> None:
        self._connection, self._channel, self.queue = connection, channel, queue

    @classmethod
    def create(cls, url: str, bindings: Iterable[tuple[str, str]], queue: str = "", *, exclusive: bool = False,
               durable: bool = False, expires_after: float | None = None) -> AmqpSubscription:
        """A queue (server-named when `queue` is empty) bound with each (exchange, pattern).
        `exclusive`: the connection's own, gone with it. `expires_after` (seconds): the broker
        deletes the queue once it has gone that long unused (no consumer, no get, no declare),
        so one that outlives its connection still goes when nobody reads it any more."""
        connection = pika.BlockingConnection(connection_parameters(url))
        try:
            channel = connection.channel()
            arguments = {"x-expires": int(expires_after * 1000)} if expires_after else None
            queue = channel.queue_declare(queue, exclusive=exclusive, durable=durable, auto_delete=False,
                                          arguments=arguments).method.queue
            for exchange in {exchange for exchange, _ in bindings}:
                channel.exchange_declare(exchange, exchange_type="topic", durable=True)
            for exchange, pattern in bindings:
                channel.queue_bind(queue, exchange, routing_key=pattern)
        except BaseException:
            connection.close()
            raise
        return cls(connection, channel, queue)

    @classmethod
    def attach(cls, url: str, queue: str) -> AmqpSubscription:
        """The existing queue `queue`, on a connection of this call's; QueueGone if it is not there."""
        connection = pika.BlockingConnection(connection_parameters(url))
        try:
            channel = connection.channel()
            channel.queue_declare(queue, passive=True)   # also counts as a use: x-expires starts again
        except ChannelClosedByBroker as error:
            connection.close()
            if error.reply_code == NOT_FOUND:
                raise QueueGone(queue) from None
            raise
        except BaseException:
            connection.close()
            raise
        return cls(connection, channel, queue)

    def take_ready(self) -> list[Delivery]:
        """Every message waiting now, without waiting for more."""
        taken = []
        while True:
            method, properties, body = self._channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return taken
            taken.append(_delivery(method, properties, body))

    def receive(self, limit: int, wait: float, linger: float = LINGER) -> list[Delivery]:
        """Up to `limit` messages: waits up to `wait` seconds for the first, then `linger` for
        more. Each message is acknowledged only once it is in the answer (prefetch is the
        limit, and messages pika holds but did not hand over go back to the queue)."""
        received: list[tuple] = []
        self._channel.basic_qos(prefetch_count=limit)
        tag = self._channel.basic_consume(self.queue, lambda _channel, *message: received.append(message))
        try:
            self._process_until(time.monotonic() + wait, lambda: received)
            if received:
                self._process_until(time.monotonic() + linger, lambda: len(received) >= limit)
            if received:
                self._channel.basic_ack(received[-1][0].delivery_tag, multiple=True)
        finally:
            self._channel.basic_cancel(tag)
        return [_delivery(*message) for message in received]

    def _process_until(self, deadline: float, done) -> None:
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._connection.process_data_events(time_limit=left)

    def stream(self) -> Iterator[Delivery]:
        """Messages as they come, for as long as the caller takes them."""
        for method, properties, body in self._channel.consume(self.queue, auto_ack=True):
            yield _delivery(method, properties, body)

    def delete(self) -> None:
        self._channel.queue_delete(self.queue)

    def close(self) -> None:
        if self._connection.is_open:
            self._connection.close()

    def __enter__(self) -> AmqpSubscription:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
