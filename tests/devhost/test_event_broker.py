"""What `make run` says of its event broker, for each way of naming one, and when it starts its own."""

from devhost.event_broker import describe, wants_local_broker


def test_each_broker_is_named_without_its_secret():
    amqp = {"EVENTS_AMQP_URL": "amqp://user:s3cret@broker.example.com:5673/%2F"}
    assert describe(amqp) == ("==> events: the AMQP broker EVENTS_AMQP_URL names, broker.example.com:5673 "
                              "(`python -m taskq listen` prints them; the browser view follows them live)")
    assert describe({"EVENTS_AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/%2F"}, started_here=True).startswith(
        "==> events: RabbitMQ started by `make run`, 127.0.0.1:5672 (")
    namespace = {"EVENTS_SERVICE_BUS_NAMESPACE": "myqueue-events.servicebus.windows.net"}
    assert describe(namespace) == ("==> events: Azure Service Bus myqueue-events.servicebus.windows.net "
                                   "(EVENTS_SERVICE_BUS_NAMESPACE)")
    connection = {"EVENTS_SERVICE_BUS_CONNECTION": "Endpoint=sb://x/;SharedAccessKey=s3cret"}
    assert "s3cret" not in describe(connection) and "Service Bus" in describe(connection)
    assert describe({**namespace, **amqp}).startswith("==> events: the AMQP broker")   # the app's order
    assert describe({}).startswith("==> events: none")


def test_rabbitmq_is_started_only_when_no_broker_is_named():
    assert wants_local_broker({}) and wants_local_broker({"EVENTS_AMQP_URL": ""})
    assert not wants_local_broker({"EVENTS_AMQP_URL": "amqp://h"})
    assert not wants_local_broker({"EVENTS_SERVICE_BUS_NAMESPACE": "n.servicebus.windows.net"})
