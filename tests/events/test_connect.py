"""Which bus, and which feeds, the settings name: one of the two adapters, or none."""

from shared.events.amqp import AmqpBus
from shared.events.amqp_feed import AmqpFeeds
from shared.events.connect import event_bus, event_feeds
from shared.events.service_bus import ServiceBusBus
from shared.events.service_bus_feed import ServiceBusFeeds
from tests.conftest import _settings


def settings(**overrides):
    return _settings("memory", "connect", overrides)


def test_amqp_service_bus_or_nothing_for_publishing_and_feeds_alike():
    amqp = settings(events_amqp_url="amqp://guest:guest@127.0.0.1:1/%2F")
    assert isinstance(event_bus(amqp), AmqpBus) and isinstance(event_feeds(amqp), AmqpFeeds)
    service_bus = settings(service_bus_namespace="myqueue.servicebus.windows.net")
    assert isinstance(event_bus(service_bus), ServiceBusBus) and isinstance(event_feeds(service_bus), ServiceBusFeeds)
    assert event_bus(settings()) is None and event_feeds(settings()) is None
