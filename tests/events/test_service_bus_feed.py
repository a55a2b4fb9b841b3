"""Feeds on Service Bus as far as the SDK goes without a namespace: the entities a feed makes
(a queue, a forwarding subscription per topic, its rules), then events published by the real
adapter (`ServiceBusBus`, with the SDK's real batches) into a namespace of our own that
applies those rules as Service Bus does (the SQL evaluator of the filter tests) and forwards
into the queue, read back through the receiver a feed uses; and SDK errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.servicebus import ServiceBusClient, ServiceBusReceiveMode
from azure.servicebus.exceptions import MessagingEntityNotFoundError, ServiceBusConnectionError
from azure.servicebus.management import ServiceBusAdministrationClient

from shared.domain.task_events import EXCHANGES, group_bindings, group_sealed
from shared.events.feeds import FeedNotFound, FeedsUnavailable
from shared.events.service_bus import ServiceBusBus
from shared.events.service_bus_feed import MIN_WAIT, QUEUE_IDLE, SUBSCRIPTION_IDLE, ServiceBusFeeds, entity_name
from tests.events.test_service_bus import FakeAdmin, RecordingBatch, lifecycle_events
from tests.events.test_service_bus_filters import evaluator


class Received:
    """A message as a receiver hands it over: body in sections, properties in AMQP's bytes."""

    def __init__(self, sent):
        self.body = iter([str(sent).encode()])
        self.message_id, self.subject = sent.message_id, sent.subject
        self.application_properties = {name.encode(): value.encode() if isinstance(value, str) else value
                                        for name, value in sent.application_properties.items()}


class Namespace(FakeAdmin):
    """Administration, sending and receiving: what the feeds and the bus use of Service Bus."""

    def __init__(self, failure=None):
        super().__init__()
        self.queues, self.queue_options, self.failure, self.receives = {}, {}, failure, []

    def create_queue(self, name, **options):
        if self.failure:
            raise self.failure
        self.queues[name], self.queue_options[name] = [], options

    # sending, as ServiceBusBus's client: each message goes where the topic's rules send it
    def get_topic_sender(self, topic_name):
        namespace = self

        class Sender:
            def create_message_batch(self):
                return RecordingBatch(262_144)

            def send_messages(self, batch):
                for message in batch.added:
                    namespace.deliver(topic_name, message)

            def close(self):
                pass
        return Sender()

    def deliver(self, topic, message):
        for (subscription_topic, name), rules in self.subscriptions.items():
            selected = any(evaluator(rule.filter)(message.application_properties) for rule in rules.values()
                           if rule.filter is not None)
            target = self.options[subscription_topic, name].get("forward_to")
            if subscription_topic == topic and selected and target in self.queues:
                self.queues[target].append(Received(message))

    # receiving, as a ServiceBusClient
    def get_queue_receiver(self, queue_name, receive_mode):
        namespace = self

        class Receiver:
            def __enter__(self):
                return self

            def __exit__(self, *exc_info):
                pass

            def receive_messages(self, max_message_count, max_wait_time):
                namespace.receives.append((queue_name, receive_mode, max_message_count, max_wait_time))
                if namespace.failure:
                    raise namespace.failure
                if queue_name not in namespace.queues:
                    raise MessagingEntityNotFoundError(message=f"{queue_name} does not exist")
                taken = namespace.queues[queue_name][:max_message_count]
                del namespace.queues[queue_name][:max_message_count]
                return taken
        return Receiver()

    def close(self):
        pass


def feeds_on(namespace) -> ServiceBusFeeds:
    return ServiceBusFeeds(lambda: namespace, lambda: namespace)


def test_a_feed_is_a_queue_fed_by_a_forwarding_subscription_on_each_topic():
    namespace, group = Namespace(), "GROUP"
    feeds_on(namespace).open("ui-feed.GROUP.feed-id", group_bindings(group))
    queue = entity_name("ui-feed.GROUP.feed-id")
    assert len(queue) <= 50 and queue[0].isalnum() and queue[-1].isalnum()
    assert namespace.queue_options == {queue: {"auto_delete_on_idle": QUEUE_IDLE}}
    assert sorted(topic for topic, _ in namespace.subscriptions) == sorted(EXCHANGES)
    for (topic, name), rules in namespace.subscriptions.items():
        assert name == queue and "$Default" not in rules and len(rules) == 1
        assert namespace.options[topic, name] == {"forward_to": queue, "auto_delete_on_idle": SUBSCRIPTION_IDLE}
    assert SUBSCRIPTION_IDLE > timedelta(minutes=15)   # outlives a feed the page keeps (FEED_RENEW_MS)


def test_published_events_of_the_group_reach_the_feed_and_no_others():
    namespace = Namespace()
    feeds = feeds_on(namespace)
    feeds.open("feed-a", group_bindings("GROUP"))
    bus = ServiceBusBus(lambda: namespace)
    mine = lifecycle_events(task_id="MINE", group_id="GROUP")
    bus.publish(list(lifecycle_events(task_id="OTHER", group_id="ELSEWHERE").values()))
    bus.publish(list(mine.values()) + [group_sealed("GROUP", "sched", "2027-01-01T00:00:00.000Z", "x", "y")])
    events = feeds.read("feed-a", limit=10, wait=20)
    assert [event.exchange for event in events] == ["task-defined", "task-pending", "task-running",
                                                    "task-completed", "task-group-sealed"]
    assert [event.id for event in events[:4]] == [event.id for event in mine.values()]   # route copies not bound
    assert events[3].routing_key == mine["task-completed"].routing_key
    assert events[3].payload == mine["task-completed"].body
    assert namespace.receives[-1][1:] == (ServiceBusReceiveMode.RECEIVE_AND_DELETE, 10, 20)
    assert feeds.read("feed-a", limit=10, wait=0) == [] and namespace.receives[-1][3] == MIN_WAIT


def test_a_missing_feed_is_not_found_and_sdk_errors_are_unavailable():
    with pytest.raises(FeedNotFound):
        feeds_on(Namespace()).read("never-opened", limit=10, wait=0)
    broken = Namespace(failure=ServiceBusConnectionError(message="link detached"))
    with pytest.raises(FeedsUnavailable):
        feeds_on(broken).open("feed-b", group_bindings("GROUP"))
    with pytest.raises(FeedsUnavailable):
        feeds_on(broken).read("feed-b", limit=10, wait=0)
    gone = Namespace(failure=ResourceNotFoundError("no such entity"))
    with pytest.raises(FeedNotFound):
        feeds_on(gone).read("feed-c", limit=10, wait=0)


def test_from_settings_builds_the_sdks_clients_without_connecting():
    connection = "Endpoint=sb://myqueue.servicebus.windows.net/;SharedAccessKeyName=feeds;SharedAccessKey=c2VjcmV0"
    feeds = ServiceBusFeeds.from_settings(connection, None)
    assert isinstance(feeds._admin_factory(), ServiceBusAdministrationClient)
    assert isinstance(feeds._client_factory(), ServiceBusClient)
