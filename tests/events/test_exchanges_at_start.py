"""Exchanges exist before the first event: a consumer binds to a fresh broker as soon as the
host is up, with nothing published yet, and receives the first task's events (before, the
exchanges were declared on the first publish and the bind failed with 404 NOT_FOUND)."""

from __future__ import annotations

import json

import pika
import pytest
import taskcluster

from devhost.rabbitmq import RabbitMQ
from shared.domain.exchanges import ALL_EXCHANGES
from shared.domain.ids import new_slugid
from shared.events.amqp import AmqpBus
from tests.conftest import eventually, start_server


def exists(url: str, exchange: str) -> bool:
    """A passive declare: the broker answers 404 (and closes the channel) for a missing one."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        connection.channel().exchange_declare(exchange, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker as closed:
        assert closed.reply_code == 404
        return False
    finally:
        connection.close()


@pytest.fixture
def fresh_broker(tmp_path):
    broker = RabbitMQ(tmp_path / "broker").start()
    yield broker
    broker.stop()


@pytest.mark.slow
def test_a_consumer_binding_before_the_first_event_receives_it(azurite, fresh_broker, tmp_path, new_task):
    assert not exists(fresh_broker.url, ALL_EXCHANGES[0])
    server = start_server(azurite, tmp_path, EVENTS_AMQP_URL=fresh_broker.url)
    try:
        # The host declares them as it starts, not at its first request (none is made here).
        eventually(lambda: all(exists(fresh_broker.url, name) for name in ALL_EXCHANGES), timeout=30,
                   message="every exchange declared")
        task_id = new_slugid()
        events = taskcluster.QueueEvents({"rootUrl": server.root_url})
        connection = pika.BlockingConnection(pika.URLParameters(fresh_broker.url))
        channel = connection.channel()
        queue = channel.queue_declare("", exclusive=True).method.queue
        for binding in (events.taskDefined({"taskId": task_id}), events.taskPending({"taskId": task_id})):
            channel.queue_bind(queue, binding["exchange"], routing_key=binding["routingKeyPattern"])
        server.client().createTask(task_id, new_task())
        received = []

        def delivered():
            method, _, body = channel.basic_get(queue, auto_ack=True)
            if method is not None:
                received.append((method.exchange, json.loads(body)["status"]["taskId"]))
            return len(received) == 2
        eventually(delivered, timeout=15, message="task-defined and task-pending")
        assert received == [("exchange/taskcluster-queue/v1/task-defined", task_id),
                            ("exchange/taskcluster-queue/v1/task-pending", task_id)]
        connection.close()
    finally:
        server.stop()


def test_the_bus_declares_every_exchange_when_it_is_made(fresh_broker):
    bus = AmqpBus(fresh_broker.url)
    try:
        assert all(exists(fresh_broker.url, name) for name in ALL_EXCHANGES)
    finally:
        bus.close()


def test_a_broker_down_at_start_is_no_error_and_the_exchanges_come_with_the_first_connection(tmp_path):
    broker = RabbitMQ(tmp_path / "later")
    bus = AmqpBus(broker.url)            # nothing listens there yet
    try:
        assert bus.connect() is False
        broker.start()
        assert bus.connect() is True and exists(broker.url, "exchange/taskcluster-hooks/v1/hook-deleted")
    finally:
        bus.close()
        broker.stop()
