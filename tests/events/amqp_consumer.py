"""A consumer of the Queue's events as any AMQP client would be one: its own queue on a
real RabbitMQ, bound with the patterns Taskcluster's client (`QueueEvents`) gives."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pika

from tests.conftest import eventually


@dataclass(frozen=True)
class Received:
    exchange: str
    routing_key: str
    body: dict
    message_id: str
    cc: tuple[str, ...]
    content_type: str
    persistent: bool

    @property
    def name(self) -> str:
        return self.exchange.rsplit("/", 1)[-1]


class Consumer:
    def __init__(self, url: str, bindings: list[dict], durable_name: str = "") -> None:
        """`bindings`: what QueueEvents' methods return ({exchange, routingKeyPattern}).
        `durable_name`: a durable queue of that name, which outlives a broker restart."""
        self.url = url
        parameters = pika.URLParameters(url)
        parameters.heartbeat = 0   # a test may not drain for minutes: no heartbeats to miss
        self.connection = pika.BlockingConnection(parameters)
        channel = self.connection.channel()
        for binding in bindings:   # the Queue declares them too; a consumer may come first
            channel.exchange_declare(binding["exchange"], exchange_type="topic", durable=True)
        if durable_name:
            self.queue = channel.queue_declare(durable_name, durable=True).method.queue
        else:
            self.queue = channel.queue_declare("", exclusive=True).method.queue
        for binding in bindings:
            channel.queue_bind(self.queue, binding["exchange"], routing_key=binding["routingKeyPattern"])
        self.channel = channel
        self.received: list[Received] = []

    def drain(self) -> list[Received]:
        while True:
            method, properties, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return self.received
            self.received.append(Received(method.exchange, method.routing_key, json.loads(body),
                                          properties.message_id, tuple((properties.headers or {}).get("CC", [])),
                                          properties.content_type, properties.delivery_mode == 2))

    def wait_for(self, count: int, timeout: float = 15, what: str = "events") -> list[Received]:
        return eventually(lambda: len(self.drain()) >= count and self.received, timeout=timeout,
                          message=f"{count} {what}")

    def close(self) -> None:
        if self.connection.is_open:
            self.connection.close()
