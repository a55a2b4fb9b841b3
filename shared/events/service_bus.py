"""The event bus on Azure Service Bus: one topic per exchange, AMQP bindings as subscriptions.

Topics are named by the exchange's short name (`task-pending`, ...; `topic_name`): valid
Service Bus entity names, and the ARM resource names `infra/main.bicep` declares (a topic
name with `/`, like the full `exchange/taskcluster-queue/v1/task-pending`, cannot be one).

Each event is sent once under its primary routing key and once per route under `route.<r>`
(Pulse's CC copies: Service Bus has no CC, so each copy is a message of its own). A copy's
message id is `<event id>` for the primary and `<event id>/route.<r>` for a route, so the
topic's duplicate detection drops an event published twice (the outbox may, after a lost
answer) copy by copy, and never one copy for another. Each message carries its routing key
as properties subscriptions filter on (`service_bus_filters`), `subject` = that key too,
`primaryRoutingKey` (what an AMQP consumer of a CC copy sees as its routing key) and
`exchange` (the full exchange name), and the event's body as JSON.

The SDK is imported on first use: the rest of the app loads without it, and without a
namespace. Credentials: a connection string, or a fully qualified namespace and
`DefaultAzureCredential` (the Function App's managed identity in Azure).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import sys
import threading
from typing import Any, Callable, Iterable, Sequence

from shared.domain.exchanges import short_name
from shared.domain.task_events import Event
from shared.events.bus import BusUnavailable
from shared.events.service_bus_filters import binding_filters, routing_properties

MAX_MESSAGE_ID = 128    # Service Bus's limit on a message id


def topic_name(exchange: str) -> str:
    """The topic of an exchange, given by its short or full name."""
    return short_name(exchange)


def messages_of(event: Event) -> list:
    """The messages of one event: the primary copy, then one per route, in the event's order."""
    from azure.servicebus import ServiceBusMessage

    body = json.dumps(event.body, separators=(",", ":"))
    return [ServiceBusMessage(body, content_type="application/json", message_id=message_id(event, key),
                              subject=key, application_properties=_properties(event, key))
            for key in [event.routing_key, *event.cc]]


def message_id(event: Event, routing_key: str) -> str:
    """Stable, and distinct for each copy of an event; hashed if longer than Service Bus takes."""
    text = event.id if routing_key == event.routing_key else f"{event.id}/{routing_key}"
    return text if len(text) <= MAX_MESSAGE_ID else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _properties(event: Event, routing_key: str) -> dict[str, str | int]:
    return {**routing_properties(routing_key), "primaryRoutingKey": event.routing_key,
            "exchange": event.exchange_name}


class ServiceBusBus:
    """The EventBus port on Service Bus. `client_factory` makes a `ServiceBusClient` (or
    anything with its `get_topic_sender` and `close`); the client and one sender per topic are
    kept between publishes (opening an AMQP link costs round trips) and dropped after an error,
    so the next publish starts on a fresh connection."""

    def __init__(self, client_factory: Callable[[], Any]):
        self._client_factory = client_factory
        self._client: Any = None
        self._senders: dict[str, Any] = {}
        # A sender is not thread-safe, and the Functions worker runs invocations in threads.
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, connection: str | None, namespace: str | None) -> ServiceBusBus:
        """EVENTS_SERVICE_BUS_CONNECTION (a connection string) or EVENTS_SERVICE_BUS_NAMESPACE
        (`<name>.servicebus.windows.net`, signed in with DefaultAzureCredential)."""
        _check_settings(connection, namespace)
        return cls(lambda: _client(connection, namespace))

    def publish(self, events: Sequence[Event]) -> None:
        """Send every event's messages, topic by topic (in order within a topic; Service Bus
        orders nothing across topics); BusUnavailable unless all were sent. The outbox then
        publishes the whole batch again, and duplicate detection drops what had been sent."""
        from azure.core.exceptions import AzureError

        with self._lock:
            try:
                for topic, messages in _by_topic(events).items():
                    _send(self._sender(topic), messages)
            except (AzureError, OSError) as error:
                self._drop_connection()
                raise BusUnavailable(f"Service Bus did not take the events: {error!r}") from error

    def close(self) -> None:
        with self._lock:
            self._drop_connection()

    def _sender(self, topic: str) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        if topic not in self._senders:
            self._senders[topic] = self._client.get_topic_sender(topic_name=topic)
        return self._senders[topic]

    def _drop_connection(self) -> None:
        handlers = [*self._senders.values(), self._client] if self._client is not None else []
        self._senders, self._client = {}, None
        for handler in handlers:
            try:
                handler.close()
            except Exception:   # noqa: BLE001 (closing a broken link may fail too; it is dropped anyway)
                pass


def _by_topic(events: Iterable[Event]) -> dict[str, list]:
    topics: dict[str, list] = {}
    for event in events:
        topics.setdefault(topic_name(event.exchange), []).extend(messages_of(event))
    return topics


def _send(sender: Any, messages: list) -> None:
    """Send in as few batches as the link's size limit allows, in order. A message too large
    for an empty batch raises MessageSizeExceededError, a ServiceBusError like the others."""
    from azure.servicebus.exceptions import MessageSizeExceededError

    batch = sender.create_message_batch()
    for message in messages:
        try:
            batch.add_message(message)
        except MessageSizeExceededError:
            if not len(batch):
                raise
            sender.send_messages(batch)
            batch = sender.create_message_batch()
            batch.add_message(message)
    if len(batch):
        sender.send_messages(batch)


def _check_settings(connection: str | None, namespace: str | None) -> None:
    if bool(connection) == bool(namespace):
        raise ValueError("set one of EVENTS_SERVICE_BUS_CONNECTION and EVENTS_SERVICE_BUS_NAMESPACE")


def _client(connection: str | None, namespace: str | None) -> Any:
    from azure.servicebus import ServiceBusClient

    if connection:
        return ServiceBusClient.from_connection_string(connection)
    return ServiceBusClient(namespace, _credential())


@functools.cache
def _credential() -> Any:
    """One per process: it caches its tokens."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


# Subscriptions: what a consumer sets up, AMQP bindings compiled to rules.

def ensure_subscription(admin: Any, topic: str, name: str, patterns: Sequence[str], **options: Any) -> list[str]:
    """Make subscription `name` of `topic` receive exactly the messages AMQP would route to a
    queue bound with `patterns`: one rule per filter (`binding_filters`), named by a digest of
    the filter, so running it again with the same patterns changes nothing, and other patterns
    or a new compiler replace the rules that differ. `admin` is a
    `ServiceBusAdministrationClient`; `options` go to `create_subscription` when it is made
    (`forward_to`, `auto_delete_on_idle`). Returns the rule names."""
    from azure.core.exceptions import ResourceNotFoundError

    topic = topic_name(topic)
    wanted = {rule_name(rule_filter): rule_filter for pattern in patterns for rule_filter in binding_filters(pattern)}
    try:
        admin.get_subscription(topic, name)
    except ResourceNotFoundError:
        admin.create_subscription(topic, name, **options)
        # Before any rule of ours: a new subscription must not take in every message meanwhile.
        admin.delete_rule(topic, name, "$Default")
    present = {rule.name for rule in admin.list_rules(topic, name)}
    for rule, rule_filter in wanted.items():
        if rule not in present:
            admin.create_rule(topic, name, rule, filter=rule_filter)
    for rule in present - set(wanted):
        admin.delete_rule(topic, name, rule)
    return sorted(wanted)


def rule_name(rule_filter: Any) -> str:
    """A rule's name (50 characters at most) from its filter."""
    text = getattr(rule_filter, "sql_expression", None) or json.dumps(rule_filter.properties, sort_keys=True)
    return "amqp-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def admin_client(connection: str | None, namespace: str | None) -> Any:
    """A ServiceBusAdministrationClient (managing subscriptions needs the Manage right, or
    the 'Azure Service Bus Data Owner' role: more than the app's sender role)."""
    from azure.servicebus.management import ServiceBusAdministrationClient

    _check_settings(connection, namespace)
    if connection:
        return ServiceBusAdministrationClient.from_connection_string(connection)
    return ServiceBusAdministrationClient(namespace, _credential())


def main(argv: Sequence[str] | None = None) -> int:
    """python -m shared.events.service_bus rules <pattern>...
    python -m shared.events.service_bus subscribe <exchange> <subscription> <pattern>..."""
    parser = argparse.ArgumentParser(prog="python -m shared.events.service_bus")
    commands = parser.add_subparsers(dest="command", required=True)
    rules = commands.add_parser("rules", help="print the rules a subscription on these patterns gets")
    rules.add_argument("patterns", nargs="+")
    subscribe = commands.add_parser("subscribe", help="create or update a subscription (reads "
                                    "EVENTS_SERVICE_BUS_CONNECTION or EVENTS_SERVICE_BUS_NAMESPACE)")
    subscribe.add_argument("exchange", help="e.g. task-completed")
    subscribe.add_argument("subscription")
    subscribe.add_argument("patterns", nargs="+", help="AMQP binding patterns, e.g. 'route.index.#'")
    args = parser.parse_args(argv)
    if args.command == "rules":
        for pattern in args.patterns:
            for rule_filter in binding_filters(pattern):
                print(f"{pattern}\t{rule_name(rule_filter)}\t{_describe(rule_filter)}")
        return 0
    admin = admin_client(os.environ.get("EVENTS_SERVICE_BUS_CONNECTION"),
                         os.environ.get("EVENTS_SERVICE_BUS_NAMESPACE"))
    with admin:
        names = ensure_subscription(admin, args.exchange, args.subscription, args.patterns)
    print(f"{topic_name(args.exchange)}/{args.subscription}: {len(names)} rules", file=sys.stderr)
    return 0


def _describe(rule_filter: Any) -> str:
    sql = getattr(rule_filter, "sql_expression", None)
    return f"sql: {sql}" if sql else f"correlation: {json.dumps(rule_filter.properties, sort_keys=True)}"


if __name__ == "__main__":
    sys.exit(main())
