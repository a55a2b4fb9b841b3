"""The event bus the settings name: AMQP (`EVENTS_AMQP_URL`), Azure Service Bus
(`EVENTS_SERVICE_BUS_CONNECTION` or `EVENTS_SERVICE_BUS_NAMESPACE`), or none (no events
are kept or published); and the feeds a reader follows it by, on the same bus."""

from __future__ import annotations

import importlib
from typing import Any

from shared.config import Settings
from shared.events.bus import EventBus
from shared.events.feeds import EventFeeds


def event_bus(settings: Settings) -> EventBus | None:
    return _adapter(settings, "amqp.AmqpBus", "service_bus.ServiceBusBus")


def event_feeds(settings: Settings) -> EventFeeds | None:
    """For readers that follow the bus over HTTP (the browser view)."""
    return _adapter(settings, "amqp_feed.AmqpFeeds", "service_bus_feed.ServiceBusFeeds")


def _adapter(settings: Settings, amqp: str, service_bus: str) -> Any:
    """The adapter class (`module.Class` of this package) for the bus the settings name, made
    from them. Imported only when chosen: only deployments on Service Bus import its SDK."""
    if settings.events_amqp_url:
        return _class(amqp)(settings.events_amqp_url)
    if settings.service_bus_connection or settings.service_bus_namespace:
        return _class(service_bus).from_settings(settings.service_bus_connection, settings.service_bus_namespace)
    return None


def _class(path: str) -> Any:
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(f".{module}", __package__), name)
