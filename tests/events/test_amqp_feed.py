"""Feeds on a real RabbitMQ: a feed bound to one group's events receives them, in order,
between reads and across connections; a read waits for the first event and no longer; what
a read cannot answer stays for the next; an unread feed expires; a broker that cannot be
reached says so. Events are the domain's own, published by the real AMQP adapter."""

from __future__ import annotations

import threading
import time

import pytest

from devhost.processes import free_port
from shared.domain.ids import new_slugid
from shared.domain.task_events import group_bindings, group_resolved
from shared.events.amqp import AmqpBus
from shared.events.amqp_feed import AmqpFeeds
from shared.events.feeds import FeedNotFound, FeedsUnavailable
from tests.events.test_service_bus import lifecycle_events


@pytest.fixture
def bus(broker):
    made = AmqpBus(broker.url)
    yield made
    made.close()


def test_a_feed_gets_its_groups_events_in_order_and_no_others(broker, bus):
    group, other = new_slugid(), new_slugid()
    feeds, name = AmqpFeeds(broker.url), f"test-feed.{new_slugid()}"
    feeds.open(name, group_bindings(group))
    mine = lifecycle_events(task_id=new_slugid(), group_id=group)
    bus.publish(list(lifecycle_events(task_id=new_slugid(), group_id=other).values()))
    bus.publish(list(mine.values()) + [group_resolved(group, "sched", "2027-01-01T00:00:00.000Z", "x", "y")])
    events = feeds.read(name, limit=100, wait=5)
    assert [event.exchange for event in events] == ["task-defined", "task-pending", "task-running",
                                                    "task-completed", "task-group-resolved"]
    assert [event.id for event in events[:4]] == [event.id for event in mine.values()]
    assert events[3].payload["status"]["state"] == "completed"
    assert events[3].routing_key == mine["task-completed"].routing_key
    assert feeds.read(name, limit=100, wait=0) == []        # what was answered is taken off the feed


def test_a_read_waits_for_the_first_event_and_answers_at_once(broker, bus):
    group = new_slugid()
    feeds, name = AmqpFeeds(broker.url), f"test-feed.{new_slugid()}"
    feeds.open(name, group_bindings(group))
    started = time.monotonic()
    assert feeds.read(name, limit=10, wait=1) == [] and 0.9 < time.monotonic() - started < 3
    later = threading.Timer(1.0, lambda: bus.publish([lifecycle_events(task_id=new_slugid(),
                                                                       group_id=group)["task-defined"]]))
    later.start()
    started = time.monotonic()
    events = feeds.read(name, limit=10, wait=20)
    took = time.monotonic() - started
    later.join()
    assert [event.exchange for event in events] == ["task-defined"] and 0.9 < took < 3


def test_what_a_read_cannot_answer_stays_for_the_next(broker, bus):
    group = new_slugid()
    feeds, name = AmqpFeeds(broker.url), f"test-feed.{new_slugid()}"
    feeds.open(name, group_bindings(group))
    published = list(lifecycle_events(task_id=new_slugid(), group_id=group).values())
    bus.publish(published)
    time.sleep(0.2)
    first = feeds.read(name, limit=3, wait=5)
    rest = feeds.read(name, limit=3, wait=5)
    assert [event.id for event in first + rest] == [event.id for event in published]
    assert (len(first), len(rest)) == (3, 1)


def test_an_unknown_or_unread_feed_is_not_found(broker, bus):
    feeds = AmqpFeeds(broker.url, idle=1.0)
    with pytest.raises(FeedNotFound):
        feeds.read(f"test-feed.{new_slugid()}", limit=10, wait=0)
    name = f"test-feed.{new_slugid()}"
    feeds.open(name, group_bindings(new_slugid()))
    assert feeds.read(name, limit=10, wait=0) == []     # a read keeps it: its idle time starts again
    time.sleep(2.5)                                      # unread past `x-expires`: the broker deleted it
    with pytest.raises(FeedNotFound):
        feeds.read(name, limit=10, wait=0)


def test_a_broker_that_cannot_be_reached_is_unavailable():
    feeds = AmqpFeeds(f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F")
    with pytest.raises(FeedsUnavailable):
        feeds.open("test-feed.x", group_bindings(new_slugid()))
    with pytest.raises(FeedsUnavailable):
        feeds.read("test-feed.x", limit=1, wait=0)
