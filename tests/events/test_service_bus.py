"""The Service Bus adapter as far as the SDK goes without a namespace: the messages built for
each kind of event, the send path through a sender of our own (with the SDK's real
ServiceBusMessageBatch, which needs no link, so the batches hold what the SDK would encode),
SDK errors as BusUnavailable, and subscriptions set up through an administration client of our own."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.servicebus import ServiceBusClient, ServiceBusMessageBatch
from azure.servicebus.exceptions import ServiceBusConnectionError
from azure.servicebus.management import CorrelationRuleFilter, SqlRuleFilter

from shared.domain import lifecycle
from shared.domain.runs import ReasonResolved
from shared.domain.task_events import Event, group_resolved, group_sealed, task_changed
from shared.domain.task_status import TaskStatus
from shared.events import service_bus
from shared.events.bus import BusUnavailable
from shared.events.service_bus import ServiceBusBus, ensure_subscription, main, messages_of, rule_name, topic_name

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
AT = "2026-11-23T12:00:00.000Z"
SUMMARY = {"provisionerId": "prov", "workerType": "linux", "taskQueueId": "prov/linux", "schedulerId": "sched",
           "projectId": "none", "taskGroupId": "GROUP", "priority": "lowest",
           "deadline": "2026-11-24T12:00:00.000Z", "expires": "2027-11-24T12:00:00.000Z"}
NOTICE = {"routes": ["index.project.latest", "notify.email.me@example.com"], "tags": {"kind": "test"}}


def lifecycle_events(notice=NOTICE, task_id="TASK", group_id="GROUP") -> dict[str, Event]:
    """The events of a task created ready, claimed and completed, by exchange."""
    summary = {**SUMMARY, "taskGroupId": group_id}
    created = lifecycle.schedule(TaskStatus.new(task_id, {**summary, "retries": 5}), NOW)
    running = lifecycle.claim(created, 0, "wg", "w1", NOW, NOW + timedelta(minutes=20))
    done = lifecycle.resolve(running, 0, ReasonResolved.COMPLETED, NOW)
    events = (task_changed(summary, notice, None, created, AT) + task_changed(summary, notice, created, running, AT)
              + task_changed(summary, notice, running, done, AT))
    return {event.exchange: event for event in events}


def test_a_task_event_is_one_message_for_its_primary_key_and_one_per_route():
    event = lifecycle_events()["task-completed"]
    primary, *copies = messages_of(event)
    assert primary.message_id == "TASK/task-completed/0"
    assert primary.subject == "primary.TASK.0.wg.w1.prov.linux.sched.GROUP._"
    assert [copy.message_id for copy in copies] == ["TASK/task-completed/0/route.index.project.latest",
                                                    "TASK/task-completed/0/route.notify.email.me@example.com"]
    assert [copy.subject for copy in copies] == ["route.index.project.latest", "route.notify.email.me@example.com"]
    for message in [primary, *copies]:
        assert message.content_type == "application/json"
        assert json.loads(str(message)) == event.body
        assert message.application_properties["primaryRoutingKey"] == event.routing_key
        assert message.application_properties["exchange"] == "exchange/taskcluster-queue/v1/task-completed"


def test_the_properties_hold_the_key_and_its_words_from_both_ends():
    properties = messages_of(lifecycle_events()["task-running"])[0].application_properties
    words = ["primary", "TASK", "0", "wg", "w1", "prov", "linux", "sched", "GROUP", "_"]
    assert properties["routingKey"] == ".".join(words) and properties["words"] == 10
    assert [properties[f"w{index}"] for index in range(10)] == words
    assert [properties[f"r{index}"] for index in range(10)] == words[::-1]
    assert "w10" not in properties and "r10" not in properties
    copy = messages_of(lifecycle_events()["task-running"])[1].application_properties
    assert (copy["words"], copy["w0"], copy["w1"], copy["r0"]) == (4, "route", "index", "latest")


def test_every_kind_of_event_is_published_as_its_body_under_its_id():
    events = [*lifecycle_events().values(),
              group_resolved("GROUP", "sched", SUMMARY["expires"], "2026-11-23T12:00:00.000Z", AT),
              group_sealed("GROUP", "sched", SUMMARY["expires"], AT, AT)]
    assert {event.exchange for event in events} == {"task-defined", "task-pending", "task-running",
                                                    "task-completed", "task-group-resolved", "task-group-sealed"}
    for event in events:
        messages = messages_of(event)
        assert len(messages) == 1 + len(event.routes)
        assert messages[0].message_id == event.id and messages[0].subject == event.routing_key
        assert all(json.loads(str(message)) == event.body for message in messages)
    group = messages_of(events[-2])[0].application_properties
    assert (group["words"], group["w1"], group["w2"]) == (4, "GROUP", "sched")


def test_message_ids_stay_within_128_characters_and_distinct_per_copy():
    event = lifecycle_events({"routes": ["x" * 120, "y" * 120], "tags": {}})["task-pending"]
    ids = [message.message_id for message in messages_of(event)]
    assert ids[0] == event.id and all(len(message_id) <= 128 for message_id in ids) and len(set(ids)) == 3
    assert ids == [message.message_id for message in messages_of(event)]   # stable


def test_topics_are_the_exchanges_short_names():
    assert topic_name("task-pending") == topic_name("exchange/taskcluster-queue/v1/task-pending") == "task-pending"


class RecordingBatch(ServiceBusMessageBatch):
    """The SDK's batch (its real size accounting), remembering what was added."""

    def __init__(self, max_size_in_bytes):
        super().__init__(max_size_in_bytes=max_size_in_bytes)
        self.added = []

    def add_message(self, message):
        super().add_message(message)
        self.added.append(message)


class FakeSender:
    def __init__(self, topic, client):
        self.topic, self.client, self.sent, self.closed = topic, client, [], False

    def create_message_batch(self):
        return RecordingBatch(self.client.batch_bytes)

    def send_messages(self, batch):
        if self.client.failure:
            raise self.client.failure
        self.sent.append(batch.added)

    def close(self):
        if self.client.close_fails:
            raise ServiceBusConnectionError(message="already detached")
        self.closed = True


class FakeClient:
    """What ServiceBusBus uses of a ServiceBusClient."""

    def __init__(self, batch_bytes=262_144, failure=None):
        self.batch_bytes, self.failure, self.senders, self.closed = batch_bytes, failure, {}, False
        self.close_fails = False

    def get_topic_sender(self, topic_name):
        assert topic_name not in self.senders, "a sender per topic is kept"
        self.senders[topic_name] = FakeSender(topic_name, self)
        return self.senders[topic_name]

    def close(self):
        self.closed = True


def bus_of(*clients):
    made = list(clients)
    return ServiceBusBus(lambda: made.pop(0))


def subjects(sender):
    return [[message.subject for message in batch] for batch in sender.sent]


def test_publish_sends_one_batch_per_topic_with_every_copy_in_order():
    client = FakeClient()
    events = lifecycle_events()
    bus_of(client).publish([events["task-defined"], events["task-pending"], events["task-running"]])
    assert set(client.senders) == {"task-defined", "task-pending", "task-running"}
    pending = client.senders["task-pending"]
    assert subjects(pending) == [[events["task-pending"].routing_key, "route.index.project.latest",
                                  "route.notify.email.me@example.com"]]
    assert [message.message_id for message in pending.sent[0]][0] == "TASK/task-pending/0"


def test_messages_beyond_the_links_batch_size_go_in_further_batches_in_order():
    events = lifecycle_events()
    messages = messages_of(events["task-completed"])
    measure = RecordingBatch(262_144)
    measure.add_message(messages[0])
    measure.add_message(messages[1])
    client = FakeClient(batch_bytes=measure.size_in_bytes)     # room for two of its three messages
    bus = bus_of(client)
    bus.publish(list(events.values()))
    bus.publish([events["task-completed"]])
    completed = client.senders["task-completed"]
    assert [len(batch) for batch in completed.sent] == [2, 1, 2, 1]
    sent_ids = [message.message_id for batch in completed.sent for message in batch]
    assert sent_ids == 2 * [message.message_id for message in messages]


def test_an_sdk_error_is_bus_unavailable_and_the_next_publish_reconnects():
    broken, fresh = FakeClient(failure=ServiceBusConnectionError(message="link detached")), FakeClient()
    bus = bus_of(broken, fresh)
    event = lifecycle_events()["task-pending"]
    with pytest.raises(BusUnavailable) as raised:
        bus.publish([event])
    assert isinstance(raised.value.__cause__, ServiceBusConnectionError)
    assert broken.closed and broken.senders["task-pending"].closed
    bus.publish([event])
    assert len(fresh.senders["task-pending"].sent) == 1


def test_a_link_that_fails_to_close_is_dropped_all_the_same():
    broken, fresh = FakeClient(failure=ServiceBusConnectionError(message="link detached")), FakeClient()
    broken.close_fails = True
    bus = bus_of(broken, fresh)
    with pytest.raises(BusUnavailable):
        bus.publish([lifecycle_events()["task-pending"]])
    assert broken.closed      # after its sender's close failed
    bus.publish([lifecycle_events()["task-pending"]])
    assert len(fresh.senders["task-pending"].sent) == 1


def test_a_message_too_large_for_any_batch_is_bus_unavailable():
    client = FakeClient(batch_bytes=300)
    with pytest.raises(BusUnavailable):
        bus_of(client).publish([lifecycle_events()["task-pending"]])
    assert client.closed and client.senders["task-pending"].sent == []


def test_errors_other_than_the_sdks_are_not_swallowed():
    def buggy_factory():
        raise KeyError("a bug")

    bus = ServiceBusBus(buggy_factory)
    with pytest.raises(KeyError):
        bus.publish([lifecycle_events()["task-pending"]])


def test_publishing_nothing_connects_to_nothing():
    bus = ServiceBusBus(lambda: pytest.fail("connected"))
    bus.publish([])
    bus.close()


def test_close_closes_the_senders_and_the_client():
    client = FakeClient()
    bus = bus_of(client)
    bus.publish([lifecycle_events()["task-pending"]])
    bus.close()
    assert client.senders["task-pending"].closed and client.closed


def test_from_settings_builds_the_sdks_client_without_connecting():
    connection = "Endpoint=sb://myqueue.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0"
    client = ServiceBusBus.from_settings(connection, None)._client_factory()
    assert isinstance(client, ServiceBusClient) and client.fully_qualified_namespace == "myqueue.servicebus.windows.net"
    by_identity = ServiceBusBus.from_settings(None, "myqueue.servicebus.windows.net")._client_factory()
    assert type(by_identity._credential).__name__ == "DefaultAzureCredential"
    for connection, namespace in [(None, None), ("", ""), (connection, "myqueue.servicebus.windows.net")]:
        with pytest.raises(ValueError):
            ServiceBusBus.from_settings(connection, namespace)


class FakeAdmin:
    """What ensure_subscription uses of a ServiceBusAdministrationClient."""

    class Rule:
        def __init__(self, name, rule_filter):
            self.name, self.filter = name, rule_filter

    def __init__(self):
        self.subscriptions, self.calls, self.options = {}, [], {}

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.calls.append(("close", None))

    def get_subscription(self, topic, name):
        if (topic, name) not in self.subscriptions:
            raise ResourceNotFoundError("no such subscription")

    def create_subscription(self, topic, name, **options):
        self.calls.append(("create_subscription", name))
        self.options[topic, name] = options
        self.subscriptions[topic, name] = {"$Default": self.Rule("$Default", None)}

    def list_rules(self, topic, name):
        return list(self.subscriptions[topic, name].values())

    def create_rule(self, topic, name, rule, filter):
        self.calls.append(("create_rule", rule))
        self.subscriptions[topic, name][rule] = self.Rule(rule, filter)

    def delete_rule(self, topic, name, rule):
        self.calls.append(("delete_rule", rule))
        del self.subscriptions[topic, name][rule]


def test_a_new_subscription_gets_one_rule_per_pattern_and_loses_its_default_rule_first():
    admin = FakeAdmin()
    names = ensure_subscription(admin, "exchange/taskcluster-queue/v1/task-completed", "indexer",
                                ["route.index.#", "primary.*.*.*.*.prov.linux.#", "*.*"])
    rules = admin.subscriptions["task-completed", "indexer"]
    assert sorted(rules) == names and len(names) == 3
    assert admin.calls[:2] == [("create_subscription", "indexer"), ("delete_rule", "$Default")]
    filters = [rule.filter for rule in rules.values()]
    assert sorted(type(rule_filter).__name__ for rule_filter in filters) == ["CorrelationRuleFilter",
                                                                              "SqlRuleFilter", "SqlRuleFilter"]
    assert all(len(name) <= 50 for name in names)


def test_ensuring_a_subscription_again_changes_only_the_rules_that_differ():
    admin = FakeAdmin()
    ensure_subscription(admin, "task-completed", "indexer", ["route.index.#", "*.*"])
    admin.calls.clear()
    assert ensure_subscription(admin, "task-completed", "indexer", ["route.index.#", "*.*"])
    assert admin.calls == []
    ensure_subscription(admin, "task-completed", "indexer", ["route.index.#", "route.notify.#"])
    kinds = [kind for kind, _ in admin.calls]
    assert kinds == ["create_rule", "delete_rule"]    # the new rule first: no moment without it
    filters = [rule.filter for rule in admin.subscriptions["task-completed", "indexer"].values()]
    assert all(isinstance(rule_filter, SqlRuleFilter) for rule_filter in filters) and len(filters) == 2


def test_rule_names_follow_the_filter():
    assert rule_name(SqlRuleFilter("w0='a'")) != rule_name(SqlRuleFilter("w0='b'"))
    assert rule_name(CorrelationRuleFilter(properties={"words": 2, "w0": "a"})) == \
        rule_name(CorrelationRuleFilter(properties={"w0": "a", "words": 2}))


def test_the_command_prints_the_rules_of_patterns(capsys):
    assert main(["rules", "route.index.#", "*.*"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["route.index.#", "*.*"]
    assert lines[0].endswith("sql: w0='route' AND w1='index'")
    assert lines[1].endswith('correlation: {"words": 2}')


def test_the_command_subscribes_with_the_settings_of_the_environment(monkeypatch):
    admin = FakeAdmin()
    made = []
    monkeypatch.setenv("EVENTS_SERVICE_BUS_NAMESPACE", "myqueue.servicebus.windows.net")
    monkeypatch.setattr(service_bus, "admin_client", lambda *settings: made.append(settings) or admin)
    assert main(["subscribe", "task-failed", "cancellations", "*.*.wg.w1.#"]) == 0
    assert made == [(None, "myqueue.servicebus.windows.net")]
    assert len(admin.subscriptions["task-failed", "cancellations"]) == 1 and admin.calls[-1] == ("close", None)
