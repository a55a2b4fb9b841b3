"""Feeds on Azure Service Bus: a feed is a queue of its own, fed by one subscription on each
topic it binds, which forwards what its rules select into the queue (Microsoft's pattern
for a consumer of several topics: one receive answers for all of them).

- The rules are the AMQP bindings compiled by `service_bus_filters` (`ensure_subscription`),
  so a feed receives what the AMQP adapter's queue would.
- The queue is deleted by Service Bus once idle for QUEUE_IDLE (5 minutes, its minimum): a
  closed page costs nothing after that. The subscriptions are deleted once idle for
  SUBSCRIPTION_IDLE, longer than a feed is kept by the page (it opens a new one every 15
  minutes): whether forwarding counts as activity for a subscription is not documented, and
  a subscription must never go before its feed. After its queue is gone, what a leftover
  subscription would forward is dead-lettered until it goes too.
- Entity names are a digest of the feed's name: Service Bus limits subscription names to 50
  characters starting and ending with a letter or digit, which a slugid need not.
- Managing entities needs the Manage right ('Azure Service Bus Data Owner' for the app's
  identity, `infra/main.bicep`). A client is made per call: the SDK's clients are not
  thread-safe, a read waits up to 20 s anyway, and a request may land on any instance.
- Reads take messages in receive-and-delete mode: an answer lost on its way to the browser
  loses its events, which the page's periodic re-list covers (as with the AMQP adapter).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any, Callable, Sequence

from shared.events.feeds import FeedEvent, FeedNotFound, FeedsUnavailable
from shared.events.service_bus import _client, admin_client, ensure_subscription, topic_name

QUEUE_IDLE = timedelta(minutes=5)
SUBSCRIPTION_IDLE = timedelta(minutes=20)
MIN_WAIT = 0.5   # seconds


def entity_name(feed: str) -> str:
    return "feed-" + hashlib.sha256(feed.encode()).hexdigest()[:40]


class ServiceBusFeeds:
    """`admin_factory` makes a ServiceBusAdministrationClient, `client_factory` a
    ServiceBusClient (or anything with the methods used here: the tests pass their own)."""

    def __init__(self, admin_factory: Callable[[], Any], client_factory: Callable[[], Any]) -> None:
        self._admin_factory, self._client_factory = admin_factory, client_factory

    @classmethod
    def from_settings(cls, connection: str | None, namespace: str | None) -> ServiceBusFeeds:
        return cls(lambda: admin_client(connection, namespace), lambda: _client(connection, namespace))

    def open(self, name: str, bindings: Sequence[tuple[str, str]]) -> None:
        from azure.core.exceptions import AzureError

        queue = entity_name(name)
        by_topic: dict[str, list[str]] = {}
        for exchange, pattern in bindings:
            by_topic.setdefault(topic_name(exchange), []).append(pattern)
        try:
            with self._admin_factory() as admin:
                admin.create_queue(queue, auto_delete_on_idle=QUEUE_IDLE)   # first: forwarding needs it
                for topic, patterns in by_topic.items():
                    ensure_subscription(admin, topic, queue, patterns, forward_to=queue,
                                        auto_delete_on_idle=SUBSCRIPTION_IDLE)
        except (AzureError, OSError) as error:
            raise FeedsUnavailable(f"Service Bus did not make the feed: {error!r}") from error

    def read(self, name: str, limit: int, wait: float) -> list[FeedEvent]:
        from azure.core.exceptions import AzureError, ResourceNotFoundError
        from azure.servicebus import ServiceBusReceiveMode
        from azure.servicebus.exceptions import MessagingEntityNotFoundError

        try:
            with self._client_factory() as client, client.get_queue_receiver(
                    entity_name(name), receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as receiver:
                # None would wait until a message comes: a read without waiting still gives the
                # link a moment to deliver what is there.
                messages = receiver.receive_messages(max_message_count=limit, max_wait_time=max(wait, MIN_WAIT))
        except (MessagingEntityNotFoundError, ResourceNotFoundError):
            raise FeedNotFound(name) from None
        except (AzureError, OSError) as error:
            raise FeedsUnavailable(f"Service Bus could not be read: {error!r}") from error
        return [_event(message) for message in messages]


def _event(message: Any) -> FeedEvent:
    """A forwarded message keeps the properties the publisher gave it (`service_bus.py`)."""
    body = b"".join(part if isinstance(part, bytes) else str(part).encode() for part in message.body)
    return FeedEvent(topic_name(_property(message, "exchange")), _property(message, "primaryRoutingKey"),
                     message.message_id, json.loads(body))


def _property(message: Any, name: str) -> str:
    # Received messages may carry property names and string values as bytes (AMQP's encoding).
    properties = message.application_properties or {}
    value = properties.get(name, properties.get(name.encode()))
    return value.decode() if isinstance(value, bytes) else str(value)
