"""The worker manager's events on a real RabbitMQ, published by a real host through the
outbox, consumed by a plain AMQP client bound with the patterns of the official client's
`taskcluster.WorkerManagerEvents`: a pool created and deleted, and a worker of a local pool
requested, running, removed and stopped, each body against Taskcluster's schema."""

from __future__ import annotations

import uuid

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from tests.conftest import ROOT_CREDENTIALS, eventually, make_task
from tests.events.amqp_consumer import Consumer
from tests.reference import schema_errors

WM = "worker-manager-schemas-json"
SCHEMA = {"worker-pool-created": "pulse-worker-pool-message", "worker-pool-updated": "pulse-worker-pool-message",
          "worker-requested": "pulse-worker-message", "worker-running": "pulse-worker-message",
          "worker-stopped": "pulse-worker-message", "worker-removed": "pulse-worker-removed-message"}

pytestmark = pytest.mark.slow


@pytest.fixture
def consumer(broker, server):
    events = taskcluster.WorkerManagerEvents({"rootUrl": server.root_url})
    made = Consumer(broker.url, [events.workerPoolCreated({"providerId": "local"}),
                                 events.workerPoolUpdated({"providerId": "null-provider"}),
                                 *(getattr(events, name)({"providerId": "local"}) for name in
                                   ("workerRequested", "workerRunning", "workerRemoved", "workerStopped"))])
    yield made
    made.close()


def test_a_pool_and_its_worker_announce_each_change(server, consumer):
    options = {"rootUrl": server.root_url, "maxRetries": 0, "credentials": dict(ROOT_CREDENTIALS)}
    wm, queue = taskcluster.WorkerManager(options), taskcluster.Queue(options)
    pool_id = f"events-{uuid.uuid4().hex[:8]}/builds"
    provisioner_id, worker_type = pool_id.split("/")
    wm.createWorkerPool(pool_id, {"providerId": "local", "description": "", "owner": "tests@example.com",
                                  "emailOnError": False,
                                  "config": {"maxCapacity": 1, "workerConfig": {"idleTimeoutSecs": 1}}})
    queue.createTask(new_slugid(), make_task(pool_id, payload={"command": [["true"]]}))
    mine = lambda: [m for m in consumer.drain() if m.body.get("workerPoolId") == pool_id]   # noqa: E731
    eventually(lambda: {"worker-stopped"} <= {m.name for m in mine()}, timeout=60, message="the worker stopped")
    wm.deleteWorkerPool(pool_id)
    received = eventually(lambda: [m for m in mine() if m.name == "worker-pool-updated"] and mine(), timeout=15,
                          message="the pool deleted")
    names = [message.name for message in received]
    assert names == ["worker-pool-created", "worker-requested", "worker-running", "worker-removed",
                     "worker-stopped", "worker-pool-updated"], names
    for message in received:
        assert schema_errors(SCHEMA[message.name], message.body, WM) == [], (message.name, message.body)
        words = message.routing_key.split(".")
        assert words[:4] == ["primary", message.body["providerId"], provisioner_id, worker_type]
        assert message.content_type == "application/json" and message.persistent and message.message_id
    worker = received[1].body
    assert received[1].routing_key.split(".")[4:6] == [worker["workerGroup"], worker["workerId"]]
    assert received[3].body["reason"] == "workerManager.removeWorker API call"   # the idle worker removed itself
    assert received[5].body == {"workerPoolId": pool_id, "providerId": "null-provider", "previousProviderId": "local"}
