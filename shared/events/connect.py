"""The event bus the settings name: AMQP (`EVENTS_AMQP_URL`), Azure Service Bus
(`EVENTS_SERVICE_BUS_CONNECTION` or `EVENTS_SERVICE_BUS_NAMESPACE`), or none (no events
are kept or published); and the feeds a reader follows it by."""

from __future__ import annotations

from ..config import Settings
from .bus import EventBus
from .feeds import EventFeeds


def event_bus(settings: Settings) -> EventBus | None:
    if settings.events_amqp_url:
        from .amqp import AmqpBus
        return AmqpBus(settings.events_amqp_url)
    if settings.service_bus_connection or settings.service_bus_namespace:
        from .service_bus import ServiceBusBus   # only deployments on Service Bus import its SDK
        return ServiceBusBus.from_settings(settings.service_bus_connection, settings.service_bus_namespace)
    return None


def event_feeds(settings: Settings) -> EventFeeds | None:
    """Feeds on the same bus, for readers that follow it through HTTP (the browser view)."""
    if settings.events_amqp_url:
        from .amqp_feed import AmqpFeeds
        return AmqpFeeds(settings.events_amqp_url)
    if settings.service_bus_connection or settings.service_bus_namespace:
        from .service_bus_feed import ServiceBusFeeds
        return ServiceBusFeeds.from_settings(settings.service_bus_connection, settings.service_bus_namespace)
    return None
