"""The AMQP publisher on a real RabbitMQ: threads publishing at once share its connections
and every event arrives; a connection that died idle is replaced by the next publish."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from devhost.rabbitmq import RabbitMQ
from shared.domain.ids import new_slugid
from shared.domain.task_events import EXCHANGE_PREFIX, group_sealed
from shared.events import amqp
from shared.events.amqp import AmqpBus
from tests.events.amqp_consumer import Consumer


def test_threads_publishing_at_once_use_several_connections_and_lose_nothing(broker, monkeypatch):
    group_id = new_slugid()
    consumer = Consumer(broker.url, [{"exchange": EXCHANGE_PREFIX + "task-group-sealed",
                                      "routingKeyPattern": f"primary.{group_id}.#"}])
    bus = AmqpBus(broker.url)
    busy, most_busy, lock = [0], [0], threading.Lock()
    real_publish = amqp._Lane.publish

    def counted(lane, events):     # how many lanes publish at the same moment
        with lock:
            busy[0] += 1
            most_busy[0] = max(most_busy[0], busy[0])
        try:
            real_publish(lane, events)
        finally:
            with lock:
                busy[0] -= 1
    monkeypatch.setattr(amqp._Lane, "publish", counted)
    events = [group_sealed(group_id, f"scheduler-{number}", "2100-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
                           "2026-01-01T00:00:00.000Z") for number in range(200)]
    try:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda event: bus.publish([event]), events))
        received = consumer.wait_for(200)
    finally:
        bus.close()
        consumer.close()
    assert sorted(message.body["schedulerId"] for message in received) == sorted(
        event.body["schedulerId"] for event in events)
    assert 1 < most_busy[0] <= amqp.LANES


def test_several_events_of_one_publish_arrive_all_and_in_their_order(broker):
    # Published together on the transacted channel and committed at once.
    group_id = new_slugid()
    consumer = Consumer(broker.url, [{"exchange": EXCHANGE_PREFIX + "task-group-sealed",
                                      "routingKeyPattern": f"primary.{group_id}.#"}])
    bus = AmqpBus(broker.url)
    events = [group_sealed(group_id, f"scheduler-{number}", "2100-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
                           "2026-01-01T00:00:00.000Z") for number in range(50)]
    try:
        bus.publish(events[:1])
        bus.publish(events[1:])
        received = consumer.wait_for(50)
    finally:
        bus.close()
        consumer.close()
    assert [message.body["schedulerId"] for message in received] == [event.body["schedulerId"] for event in events]


@pytest.mark.slow
def test_a_publish_after_the_broker_restarted_reconnects_at_once(tmp_path):
    # The lane's connection died while idle (the broker went away and came back between two
    # publishes): the publish finds it dead, connects again and publishes, no error to the caller.
    broker = RabbitMQ(tmp_path / "broker").start()
    bus = AmqpBus(broker.url)
    group_id = new_slugid()
    event = group_sealed(group_id, "scheduler", "2100-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
                         "2026-01-01T00:00:00.000Z")
    try:
        bus.publish([event])
        broker.stop()
        broker.start()
        consumer = Consumer(broker.url, [{"exchange": EXCHANGE_PREFIX + "task-group-sealed",
                                          "routingKeyPattern": f"primary.{group_id}.#"}])
        bus.publish([event])
        bus.publish([event, event])   # the transacted channel of the new connection too
        assert len(consumer.wait_for(3)) == 3
        consumer.close()
    finally:
        bus.close()
        broker.stop()
