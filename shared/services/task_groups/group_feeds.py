"""Following a task group's events over HTTP: the browser view's feeds.

A feed is a subscription on the event bus (`events/feeds.py`) bound to the group's events,
read by long polls: `open` makes one, `read` answers what arrived since the last read,
waiting up to MAX_WAIT seconds for the first event (as claimWork waits for work). A long
poll and not a stream (Server-Sent Events, WebSockets): an Azure Functions Python HTTP
function answers with one body, and does not stream it. The subscription outlives each
read, so nothing published between two reads is missed, and it goes away by itself once
the page stops reading.

A feed's id is random (128 bits) so that nobody reads, and so takes, the events of another
reader's feed; it is not a credential: every read is checked against the scope listTaskGroup
requires, since a group's events tell what listTaskGroup tells. A feed answers only its own
group's events, whatever the bus delivered.
"""

from __future__ import annotations

import logging
import secrets

from shared.domain.errors import NotFound, QueueError
from shared.domain.task_events import group_bindings, group_of
from shared.events.feeds import EventFeeds, FeedNotFound, FeedsUnavailable

log = logging.getLogger("queue.feeds")
MAX_WAIT = 20        # seconds a read waits for a first event
MAX_EVENTS = 100     # events a read answers at most
FEED_ID_BYTES = 16   # 22 URL-safe characters


class EventsUnavailable(QueueError):
    """The event bus could not be reached: the reader should fall back to polling for now."""

    code = "ServiceUnavailable"


def new_feed_id() -> str:
    return secrets.token_urlsafe(FEED_ID_BYTES)


class GroupFeeds:
    def __init__(self, feeds: EventFeeds | None) -> None:
        """`feeds`: None when no bus is configured (then no events exist to follow)."""
        self._feeds = feeds

    def open(self, task_group_id: str) -> dict:
        """A new feed of the group's events, or `live: false` (and why) when there are none to
        follow, so that the page polls instead. The group need not exist yet: a page may
        watch a graph that is still being created."""
        if self._feeds is None:
            return {"taskGroupId": task_group_id, "live": False, "reason": "no event bus is configured"}
        feed_id = new_feed_id()
        try:
            self._feeds.open(_feed_name(task_group_id, feed_id), group_bindings(task_group_id))
        except FeedsUnavailable as error:
            log.warning("no feed for task group %s: %s", task_group_id, error)
            return {"taskGroupId": task_group_id, "live": False, "reason": "the event bus is unreachable"}
        log.info("feed opened for task group %s", task_group_id)
        return {"taskGroupId": task_group_id, "live": True, "feedId": feed_id}

    def read(self, task_group_id: str, feed_id: str, wait: int = MAX_WAIT, limit: int = MAX_EVENTS) -> dict:
        if self._feeds is None:
            raise NotFound("No event bus is configured: there are no feeds")
        try:
            events = self._feeds.read(_feed_name(task_group_id, feed_id), min(limit, MAX_EVENTS),
                                      min(wait, MAX_WAIT))
        except FeedNotFound:
            raise NotFound(f"Feed {feed_id} of task group {task_group_id} does not exist, or expired "
                           "unread; open another") from None
        except FeedsUnavailable as error:
            # The details (which may name the broker's host) go to the log, not to the caller.
            log.warning("reading a feed of task group %s failed: %s", task_group_id, error)
            raise EventsUnavailable("The event bus could not be read; poll instead for now") from None
        own = [event.to_json() for event in events if group_of(event.exchange, event.routing_key) == task_group_id]
        return {"taskGroupId": task_group_id, "feedId": feed_id, "events": own}


def _feed_name(task_group_id: str, feed_id: str) -> str:
    """The group is part of the name, so a feed is only found under its own group's URL."""
    return f"ui-feed.{task_group_id}.{feed_id}"
