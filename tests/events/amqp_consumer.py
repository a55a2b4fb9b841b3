"""A consumer of the Queue's events as any AMQP client would be one: its own queue on a
real RabbitMQ, bound with the patterns Taskcluster's client (`QueueEvents`) gives. The
queue and its reading are the server side's one subscription mechanism
(`shared/events/amqp_subscription.py`); this adds only what tests need: keeping everything
received, and waiting for a count."""

from __future__ import annotations

from shared.events.amqp_subscription import AmqpSubscription, Delivery
from tests.conftest import eventually

Received = Delivery   # what a test sees of a message: exchange, routing key, body, id, CC, ...


class Consumer:
    def __init__(self, url: str, bindings: list[dict], durable_name: str = "") -> None:
        """`bindings`: what QueueEvents' methods return ({exchange, routingKeyPattern}).
        `durable_name`: a durable queue of that name, which outlives a broker restart."""
        self.url = url
        self.subscription = AmqpSubscription.create(
            url, [(binding["exchange"], binding["routingKeyPattern"]) for binding in bindings], durable_name,
            exclusive=not durable_name, durable=bool(durable_name))
        self.queue = self.subscription.queue
        self.received: list[Received] = []

    def drain(self) -> list[Received]:
        self.received.extend(self.subscription.take_ready())
        return self.received

    def wait_for(self, count: int, timeout: float = 15, what: str = "events") -> list[Received]:
        return eventually(lambda: len(self.drain()) >= count and self.received, timeout=timeout,
                          message=f"{count} {what}")

    def close(self) -> None:
        self.subscription.close()
