"""`taskq listen` on Azure Service Bus, as far as the SDK goes without a namespace: the
listener's feed is made and read through the Function App's Service Bus feeds, on the
stand-in namespace of their own tests (which applies the rules as Service Bus does), with
events published by the real bus adapter."""

from __future__ import annotations

import threading

from shared.events.service_bus import ServiceBusBus
from shared.events.service_bus_feed import QUEUE_IDLE
from taskq.event_source import ServiceBusSubscription
from taskq.events import TASK_EXCHANGES, bindings, chosen_exchanges
from tests.events.test_service_bus import lifecycle_events
from tests.events.test_service_bus_feed import Namespace, feeds_on


def test_a_tasks_events_reach_its_listener_and_no_others():
    namespace = Namespace()
    exchanges = chosen_exchanges(None, {"--task": "MINE"})
    assert exchanges == list(TASK_EXCHANGES)   # a task's filter leaves the group exchanges out
    subscription = ServiceBusSubscription(feeds_on(namespace), bindings(exchanges, taskId="MINE"))
    # A feed of its own, which Service Bus deletes once idle.
    assert [options["auto_delete_on_idle"] for options in namespace.queue_options.values()] == [QUEUE_IDLE]
    bus = ServiceBusBus(lambda: namespace)
    bus.publish(list(lifecycle_events(task_id="OTHER", group_id="ELSEWHERE").values()))
    mine = lifecycle_events(task_id="MINE", group_id="GROUP")
    bus.publish(list(mine.values()))
    stop = threading.Event()
    received = []
    for event in subscription.events(stop):
        received.append(event)
        if len(received) == len(mine):
            stop.set()
            break
    assert [event.exchange for event in received] == list(mine)
    assert all(event.routing_key.split(".")[1] == "MINE" for event in received)
    assert received[-1].payload == mine["task-completed"].body
