"""Events on a real RabbitMQ, published by a real host, consumed by a plain AMQP client bound
with the patterns of the official client's `taskcluster.QueueEvents`: every exchange and
routing-key word, bodies against Taskcluster's schemas, `route.<r>` copies, and seed 004's
consumers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import taskcluster

from devhost.rabbitmq import RabbitMQ
from shared.domain.ids import new_slugid
from tests.conftest import ROOT, start_server
from tests.events.amqp_consumer import Consumer, Received
from tests.reference import schema_errors

EXCHANGES = ("task-defined", "task-pending", "task-running", "task-completed", "task-failed", "task-exception")


@pytest.fixture
def events(server):
    return taskcluster.QueueEvents({"rootUrl": server.root_url})


@pytest.fixture
def consumers(broker):
    made = []

    def make(bindings, **options) -> Consumer:
        made.append(Consumer(broker.url, bindings, **options))
        return made[-1]
    yield make
    for consumer in made:
        consumer.close()


def conforming(message: Received) -> Received:
    schema = "task-group-changed-message" if message.name.startswith("task-group") else f"{message.name}-message"
    assert schema_errors(schema, message.body) == [], (message.name, message.body)
    assert message.content_type == "application/json" and message.persistent and message.message_id
    return message


def claim(queue, task_queue_id: str, worker_id: str = "w1") -> dict:
    return queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": worker_id, "tasks": 1})["tasks"][0]


def test_a_lifecycle_on_every_task_exchange_with_every_routing_key_word(queue, events, consumers, new_task,
                                                                        task_queue_id):
    task_id, group_id = new_slugid(), new_slugid()
    consumer = consumers([getattr(events, name)({"taskId": task_id}) for name in
                          ("taskDefined", "taskPending", "taskRunning", "taskCompleted")])
    queue.createTask(task_id, new_task(taskGroupId=group_id, schedulerId="sched-1", tags={"kind": "test"}))
    claim(queue, task_queue_id)
    queue.reportCompleted(task_id, "0")
    received = [conforming(message) for message in consumer.wait_for(4)]
    assert [message.name for message in received] == ["task-defined", "task-pending", "task-running",
                                                      "task-completed"]
    provisioner, worker_type = task_queue_id.split("/")
    tail = [provisioner, worker_type, "sched-1", group_id, "_"]
    assert [message.routing_key.split(".") for message in received] == [
        ["primary", task_id, "_", "_", "_", *tail],
        ["primary", task_id, "0", "_", "_", *tail],
        ["primary", task_id, "0", "wg", "w1", *tail],
        ["primary", task_id, "0", "wg", "w1", *tail]]
    running, completed = received[2].body, received[3].body
    assert running["takenUntil"] and (running["workerGroup"], running["workerId"]) == ("wg", "w1")
    assert completed["status"]["state"] == "completed" and completed["task"] == {"tags": {"kind": "test"}}
    assert len({message.message_id for message in received}) == 4


def test_a_retried_run_is_announced_exception_then_pending(queue, events, consumers, new_task, task_queue_id):
    """Taskcluster 106 publishes the exception of a run it retries (here worker-shutdown; its
    claim resolver does the same for an expired claim), then the new run's task-pending."""
    task_id = new_slugid()
    consumer = consumers([events.taskException({"taskId": task_id}), events.taskPending({"taskId": task_id})])
    queue.createTask(task_id, new_task(retries=1))
    claimed = claim(queue, task_queue_id)
    worker = taskcluster.Queue({"rootUrl": queue.options["rootUrl"], "credentials": claimed["credentials"]})
    worker.reportException(task_id, "0", {"reason": "worker-shutdown"})
    received = [conforming(message) for message in consumer.wait_for(3)]
    assert [(message.name, message.body["runId"]) for message in received] == [
        ("task-pending", 0), ("task-exception", 0), ("task-pending", 1)]
    exception = received[1].body
    assert exception["status"]["runs"][0]["reasonResolved"] == "worker-shutdown"
    assert (exception["workerGroup"], exception["workerId"]) == ("wg", "w1")


def test_a_group_canceled_whole_is_announced_resolved_once(queue, events, consumers, new_task):
    """Its last members resolve at once (cancelTaskGroup cancels in parallel): each finds every
    count at zero, and one of them announces (Taskcluster 106 sends one here too)."""
    group_id = new_slugid()
    consumer = consumers([events.taskGroupResolved({"taskGroupId": group_id})])
    for _ in range(24):
        queue.createTask(new_slugid(), new_task(taskGroupId=group_id))
    queue.sealTaskGroup(group_id)
    assert queue.cancelTaskGroup(group_id)["cancelledCount"] == 24
    consumer.wait_for(1)
    time.sleep(2)   # a second would come within milliseconds
    assert len(consumer.drain()) == 1


def test_failed_and_exception_and_the_group_exchanges(queue, events, consumers, new_task, task_queue_id):
    group_id, failing, cancelled = new_slugid(), new_slugid(), new_slugid()
    consumer = consumers([events.taskFailed({"taskGroupId": group_id}), events.taskException({"taskGroupId": group_id}),
                          events.taskGroupResolved({"taskGroupId": group_id}),
                          events.taskGroupSealed({"taskGroupId": group_id})])
    queue.createTask(failing, new_task(taskGroupId=group_id))
    queue.createTask(cancelled, new_task(taskGroupId=group_id, dependencies=[failing]))
    claim(queue, task_queue_id)
    queue.reportFailed(failing, "0")
    queue.sealTaskGroup(group_id)
    queue.cancelTask(cancelled)
    received = {message.name: conforming(message) for message in consumer.wait_for(4)}
    assert set(received) == {"task-failed", "task-exception", "task-group-resolved", "task-group-sealed"}
    assert received["task-failed"].routing_key.split(".")[3:5] == ["wg", "w1"]
    # Cancelled before any claim: a run made only to be resolved, with no worker words.
    assert received["task-exception"].routing_key.split(".")[2:5] == ["0", "_", "_"]
    assert received["task-exception"].body["status"]["runs"][0]["reasonResolved"] == "canceled"
    assert received["task-group-resolved"].routing_key == f"primary.{group_id}.-._"
    assert received["task-group-sealed"].body["sealed"]


def test_routes_are_copied_to_route_keys_as_pulse_does(queue, consumers, new_task, task_queue_id):
    task_id = new_slugid()
    route = f"index.project.{task_id}"
    consumer = consumers([{"exchange": "exchange/taskcluster-queue/v1/task-completed",
                           "routingKeyPattern": f"route.{route}"}])
    queue.createTask(task_id, new_task(routes=[route, "notify.other"]))
    claim(queue, task_queue_id)
    queue.reportCompleted(task_id, "0")
    [message] = consumer.wait_for(1)
    # The consumer sees the primary routing key; the copy came by the CC header.
    assert message.routing_key.startswith(f"primary.{task_id}.0.")
    assert message.cc == (f"route.{route}", "route.notify.other")


def test_seed_004_consumers(queue, events, consumers, new_task, task_queue_id):
    """An observant provisioner, a worker told of cancellation, a dependent scheduler, and a
    statistics monitor, with the seed's patterns behind Taskcluster's leading `primary`."""
    provisioner, worker_type = task_queue_id.split("/")
    scheduler = f"sched-{new_slugid()[:8]}".replace("_", "-")
    provisioners = consumers([{"exchange": "exchange/taskcluster-queue/v1/task-pending",
                               "routingKeyPattern": f"primary.*.*.*.*.{provisioner}.#"}])
    cancellation = consumers([{"exchange": "exchange/taskcluster-queue/v1/task-exception",
                               "routingKeyPattern": "primary.*.*.wg.cancel-me.#"}])
    dependents = consumers([{"exchange": f"exchange/taskcluster-queue/v1/{name}",
                             "routingKeyPattern": f"primary.*.*.*.*.*.*.{scheduler}.#"}
                            for name in ("task-completed", "task-failed", "task-exception")])
    statistics = consumers([{"exchange": f"exchange/taskcluster-queue/v1/{name}",
                             "routingKeyPattern": f"primary.*.*.*.*.{provisioner}.{worker_type}.#"}
                            for name in EXCHANGES])
    first, second = new_slugid(), new_slugid()
    queue.createTask(first, new_task(schedulerId=scheduler))
    queue.createTask(second, new_task(schedulerId=scheduler))
    assert {message.body["status"]["taskId"] for message in provisioners.wait_for(2)} == {first, second}
    done = claim(queue, task_queue_id)["status"]["taskId"]
    queue.reportCompleted(done, "0")
    held = claim(queue, task_queue_id, worker_id="cancel-me")["status"]["taskId"]
    queue.cancelTask(held)
    [told] = cancellation.wait_for(1)
    assert told.body["status"]["taskId"] == held and told.body["workerId"] == "cancel-me"
    assert {message.name for message in dependents.wait_for(2)} == {"task-completed", "task-exception"}
    counts = {}
    for message in statistics.wait_for(8):
        counts[message.name] = counts.get(message.name, 0) + 1
    assert counts == {"task-defined": 2, "task-pending": 2, "task-running": 2, "task-completed": 1,
                      "task-exception": 1}


def test_no_completion_is_lost_in_a_burst_of_40(server, events, consumers, new_task, task_queue_id):
    group_id = new_slugid()
    consumer = consumers([events.taskCompleted({"taskGroupId": group_id})])
    queue = server.client()
    task_ids = [new_slugid() for _ in range(40)]
    for task_id in task_ids:
        queue.createTask(task_id, new_task(taskGroupId=group_id))
    claims = []
    while len(claims) < 40:
        claims += queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "burst", "tasks": 32})["tasks"]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda c: server.client().reportCompleted(c["status"]["taskId"], str(c["runId"])), claims))
    assert len(claims) == 40
    assert sorted(message.body["status"]["taskId"] for message in consumer.wait_for(40)) == sorted(task_ids)


@pytest.mark.slow
def test_a_broker_that_is_down_delays_events_and_loses_none(azurite, tmp_path, new_task, task_queue_id):
    broker = RabbitMQ(tmp_path / "broker").start()
    server = start_server(azurite, tmp_path, EVENTS_AMQP_URL=broker.url)
    task_id = new_slugid()
    events = taskcluster.QueueEvents({"rootUrl": server.root_url})
    bindings = [events.taskDefined({"taskId": task_id}), events.taskPending({"taskId": task_id}),
                events.taskRunning({"taskId": task_id}), events.taskCompleted({"taskId": task_id})]
    try:
        Consumer(broker.url, bindings, durable_name=f"survivor-{task_id}").close()
        broker.stop()
        queue = server.client()
        queue.createTask(task_id, new_task())                 # the API keeps working
        claim(queue, task_queue_id)
        queue.reportCompleted(task_id, "0")
        broker.start()
        consumer = Consumer(broker.url, bindings, durable_name=f"survivor-{task_id}")
        received = consumer.wait_for(4, timeout=30)
        assert [message.name for message in received] == ["task-defined", "task-pending", "task-running",
                                                          "task-completed"]
        consumer.close()
    finally:
        server.stop()
        broker.stop()


def test_the_listen_command_prints_json_lines(broker, queue, new_task):
    task_id = new_slugid()
    listener = subprocess.Popen([sys.executable, "-m", "shared.events", "listen", "task-defined",
                                 f"primary.{task_id}.#", "--count", "1"], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True, env={"EVENTS_AMQP_URL": broker.url, "PATH": "/usr/bin:/bin"})
    try:
        assert json.loads(listener.stdout.readline())["listening"].endswith("/task-defined")
        queue.createTask(task_id, new_task())
        line = json.loads(listener.stdout.readline())
        assert line["routingKey"].startswith(f"primary.{task_id}.") and line["payload"]["status"]["taskId"] == task_id
        assert listener.wait(timeout=10) == 0
    finally:
        if listener.poll() is None:
            listener.kill()


def test_artifact_created(queue, events, consumers, new_task, task_queue_id):
    task_id = new_slugid()
    consumer = consumers([events.artifactCreated({"taskId": task_id})])
    queue.createTask(task_id, new_task())
    claim(queue, task_queue_id)
    expires = queue.task(task_id)["expires"]
    queue.createArtifact(task_id, "0", "public/report.html", {
        "storageType": "reference", "url": "https://example.com/report", "contentType": "text/html",
        "expires": expires})
    [message] = map(conforming, consumer.wait_for(1))
    assert message.body["artifact"] == {"storageType": "reference", "name": "public/report.html",
                                        "expires": expires, "contentType": "text/html"}
    assert message.routing_key.split(".")[1:5] == [task_id, "0", "wg", "w1"]
