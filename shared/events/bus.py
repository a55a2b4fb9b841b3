"""The port every event bus adapter implements: publish a batch of events, or say it could not.

An adapter publishes each event on its exchange under its primary routing key and, for each
of the task's routes `r`, under `route.<r>` too (Pulse's CC copies), with the event's id as
the message id. `publish` returns only once the bus has accepted every event of the batch
(AMQP publisher confirms, Service Bus's send); otherwise it raises `BusUnavailable`, and the
events stay in the outbox to be published again later.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from shared.domain.task_events import Event


class BusUnavailable(Exception):
    """The bus did not accept a batch (down, unreachable, refused); try again later."""


class EventBus(Protocol):
    def publish(self, events: Sequence[Event]) -> None:
        """Publish `events` in order; raise BusUnavailable unless all were accepted."""

    def close(self) -> None:
        """Release connections (the process is stopping)."""
