"""Where `taskq listen` reads the Queue's events: an AMQP broker (RabbitMQ, Pulse; the local
host's own by default) or, for a deployment on Azure, its Service Bus namespace.

On Service Bus the listener reads a feed as the browser view's are made on the Function App
(`shared/events/service_bus_feed.py`: a queue fed by a forwarding subscription per topic,
whose rules are the AMQP bindings compiled; deleted by Service Bus once idle for 5 minutes).
That code is the app's, so this mode runs from the project folder, where it can be imported;
making those entities takes the 'Azure Service Bus Data Owner' role on the namespace
(docs/deploy.md says how to get it).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

from taskq.connection import events_url
from taskq.events import Event, Subscription
from taskq.failures import CommandError

NO_BROKER = ("no event broker: set EVENTS_AMQP_URL (amqp://user:password@host:5672/vhost), or "
             "EVENTS_SERVICE_BUS_NAMESPACE (<name>.servicebus.windows.net, for a deployment on Azure), "
             "or pass --amqp-url or --service-bus")


def open(args, chosen: list[tuple[str, str]]):   # noqa: A001 (the module is read as event_source.open)
    """(subscription, where it reads, for people) for the bindings `chosen`."""
    namespace = args.service_bus or os.environ.get("EVENTS_SERVICE_BUS_NAMESPACE")
    connection = None if args.service_bus else os.environ.get("EVENTS_SERVICE_BUS_CONNECTION")
    amqp = args.amqp_url or (None if args.service_bus else os.environ.get("EVENTS_AMQP_URL"))
    if amqp or not (namespace or connection):
        url = amqp or events_url()
        if not url:
            raise CommandError(NO_BROKER)
        where = urlsplit(url)
        return Subscription(url, chosen), f"AMQP {where.hostname}:{where.port or 5672}"
    return ServiceBusSubscription.connect(connection, namespace, chosen), \
        f"Service Bus {namespace or 'namespace of EVENTS_SERVICE_BUS_CONNECTION'}"


class ServiceBusSubscription:
    """A feed of its own (named at random) on the namespace; `feeds` is an EventFeeds."""

    READ_WAIT = 5.0   # seconds each read waits for the first event

    def __init__(self, feeds, chosen: list[tuple[str, str]]) -> None:
        self._feeds, self._name = feeds, f"taskq-listen-{secrets.token_hex(8)}"
        feeds.open(self._name, chosen)

    @classmethod
    def connect(cls, connection: str | None, namespace: str | None, chosen) -> ServiceBusSubscription:
        try:
            from shared.events.service_bus_feed import ServiceBusFeeds
        except ImportError:
            raise CommandError("listening on Service Bus uses the Function App's own code: run "
                               "`python -m taskq listen` from the project folder (after `make run` or "
                               "`pip install -r requirements.txt`)") from None
        return cls(ServiceBusFeeds.from_settings(connection, namespace), chosen)

    def events(self, stop: threading.Event | None = None) -> Iterator[Event]:
        while stop is None or not stop.is_set():
            for event in self._feeds.read(self._name, 100, self.READ_WAIT):
                yield Event(event.exchange, event.routing_key, event.payload)

    def close(self) -> None:
        """Nothing to delete: Service Bus removes the feed once it goes unread."""
