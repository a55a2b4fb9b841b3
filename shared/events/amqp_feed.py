"""Feeds on an AMQP broker: a feed is a queue named after it, bound to the feed's patterns,
that the broker deletes once it has gone FEED_IDLE unread (`x-expires`).

The queue is neither exclusive nor auto-deleted: each HTTP request reads it on a connection
of its own (the Functions worker serves requests on many threads, or many instances, and a
pika connection belongs to one thread), so the queue must outlive every connection, and
it is `x-expires` that removes it once the page stops asking. A connection per call costs
about a millisecond locally, against a read that waits up to 20 s.
"""

from __future__ import annotations

from typing import Sequence

from pika.exceptions import AMQPError

from shared.events.amqp_subscription import AmqpSubscription, QueueGone
from shared.events.feeds import FeedEvent, FeedNotFound, FeedsUnavailable

FEED_IDLE = 120.0   # seconds: a queue unread this long is deleted by the broker


class AmqpFeeds:
    def __init__(self, url: str, idle: float = FEED_IDLE) -> None:
        self._url, self._idle = url, idle

    def open(self, name: str, bindings: Sequence[tuple[str, str]]) -> None:
        try:
            AmqpSubscription.create(self._url, bindings, name, expires_after=self._idle).close()
        except (AMQPError, OSError) as error:
            raise FeedsUnavailable(f"the broker did not make the feed: {error!r}") from error

    def read(self, name: str, limit: int, wait: float) -> list[FeedEvent]:
        try:
            with AmqpSubscription.attach(self._url, name) as subscription:
                deliveries = subscription.receive(limit, wait)
        except QueueGone:
            raise FeedNotFound(name) from None
        except (AMQPError, OSError) as error:
            raise FeedsUnavailable(f"the broker could not be read: {error!r}") from error
        return [FeedEvent(delivery.name, delivery.routing_key, delivery.message_id, delivery.body)
                for delivery in deliveries]
