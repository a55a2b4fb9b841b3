"""The port a reader of events implements: a feed, a named subscription that keeps the events
of its bindings between reads, and goes away by itself once nobody reads it.

It is what lets a browser follow the bus through HTTP (see `services/task_groups/group_feeds.py`): a
feed outlives each request, so a reader polling it misses nothing between two polls, and
costs nothing once the page is closed. Adapters: `amqp_feed.py` (a queue with `x-expires`),
`service_bus_feed.py` (a queue fed by a subscription on each topic, deleted when idle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence


class FeedNotFound(Exception):
    """No feed of that name: never opened, or gone after going unread."""


class FeedsUnavailable(Exception):
    """The bus could not be reached or refused; the caller may try again later."""


@dataclass(frozen=True)
class FeedEvent:
    exchange: str       # the short name: 'task-completed'
    routing_key: str    # the primary routing key
    id: str | None      # the message id (stable per change: a repeat is the same event)
    payload: dict

    def to_json(self) -> dict:
        return {"exchange": self.exchange, "routingKey": self.routing_key, "id": self.id, "payload": self.payload}


class EventFeeds(Protocol):
    def open(self, name: str, bindings: Sequence[tuple[str, str]]) -> None:
        """Make feed `name`, receiving from now on what AMQP would route to a queue bound with
        each (full exchange name, pattern)."""

    def read(self, name: str, limit: int, wait: float) -> list[FeedEvent]:
        """Up to `limit` events, oldest first, waiting up to `wait` seconds for the first;
        FeedNotFound if there is no such feed. What is answered is taken off the feed."""
