"""The publishing connection on a real RabbitMQ: messages larger than a frame arrive whole
by both ways of publishing, and what the broker refuses ends the connection with an error
that says why (and never shows the password)."""

from __future__ import annotations

import json
import socket

import pytest
from pamqp import commands

from shared.domain.ids import new_slugid
from shared.events.amqp_connection import AmqpConnection, AmqpConnectionError, BrokerAddress
from tests.events.amqp_consumer import Consumer

EXCHANGE = "exchange/taskcluster-queue/v1/task-completed"


def _connection(url: str) -> AmqpConnection:
    return AmqpConnection(BrokerAddress.from_url(url), [EXCHANGE], connect_timeout=3, reply_timeout=10)


def _properties(message_id: str) -> commands.Basic.Properties:
    return commands.Basic.Properties(content_type="application/json", delivery_mode=2, message_id=message_id,
                                     headers={"CC": ["route.some.route"]})


def test_messages_larger_than_a_frame_arrive_whole_confirmed_and_committed(broker):
    key = f"primary.{new_slugid()}"
    consumer = Consumer(broker.url, [{"exchange": EXCHANGE, "routingKeyPattern": key}])
    big = {"filler": "x" * 300_000}        # RabbitMQ's frames hold 128 KiB: three body frames
    connection = _connection(broker.url)
    try:
        connection.publish_confirmed(EXCHANGE, key, json.dumps({**big, "n": 0}).encode(), _properties("m0"))
        connection.publish_committed([(EXCHANGE, key, json.dumps({**big, "n": n}).encode(), _properties(f"m{n}"))
                                      for n in (1, 2)])
        connection.publish_confirmed(EXCHANGE, key, b'{"n": 3}', _properties("m3"))   # tags still in step
        received = consumer.wait_for(4)
    finally:
        connection.close()
        consumer.close()
    assert [message.body["n"] for message in received] == [0, 1, 2, 3]
    assert all(message.body["filler"] == big["filler"] for message in received[:3])
    assert [message.message_id for message in received] == ["m0", "m1", "m2", "m3"]
    assert all(message.persistent and message.cc == ("route.some.route",) for message in received)
    assert not connection.is_open


def test_a_missing_exchange_ends_the_connection_with_the_brokers_reason(broker):
    connection = _connection(broker.url)
    with pytest.raises(AmqpConnectionError, match="404"):
        connection.publish_confirmed("exchange/no-such-exchange", "key", b"{}", _properties("m"))
    assert not connection.is_open
    with pytest.raises(AmqpConnectionError, match="closed"):
        connection.publish_confirmed(EXCHANGE, "key", b"{}", _properties("m"))


def test_wrong_credentials_are_refused_without_showing_the_password(broker):
    url = broker.url.replace("guest:guest@", "guest:not-the-secret-1234@")
    with pytest.raises(AmqpConnectionError) as refused:
        _connection(url)
    assert "not-the-secret-1234" not in str(refused.value)
    assert "not-the-secret-1234" not in repr(BrokerAddress.from_url(url))


def test_nothing_listening_is_an_error_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]   # bound, not listening: refused
        with pytest.raises(AmqpConnectionError, match="cannot connect"):
            _connection(f"amqp://guest:guest@127.0.0.1:{port}/%2F")


@pytest.mark.parametrize("url, address", [
    ("amqp://guest:guest@127.0.0.1:5672/%2F", ("127.0.0.1", 5672, "guest", "guest", "/", False)),
    ("amqp://u:p%40ss@broker", ("broker", 5672, "u", "p@ss", "/", False)),
    ("amqps://u:p@pulse.example.com/pulse-vhost", ("pulse.example.com", 5671, "u", "p", "pulse-vhost", True)),
])
def test_broker_urls_read_as_pika_reads_them(url, address):
    found = BrokerAddress.from_url(url)
    assert (found.host, found.port, found.username, found.password, found.virtual_host, found.tls) == address


def test_a_url_of_another_scheme_is_refused():
    with pytest.raises(ValueError, match="amqp://"):
        BrokerAddress.from_url("http://guest:guest@127.0.0.1:5672/")
