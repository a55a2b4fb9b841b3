"""The exchanges each service declares are Taskcluster's, named as its clients name them."""

import json

import taskcluster

from shared.domain.exchanges import ALL_EXCHANGES, OUR_QUEUE_EXCHANGES, SERVICE_EXCHANGES, full_name, short_name
from shared.domain.task_events import EXCHANGES as PUBLISHED
from tests.reference import REFERENCE


def test_every_service_declares_exactly_the_exchanges_of_taskclusters_reference_then_ours():
    for service, reference in (("queue", "queue-exchanges.json"), ("hooks", "hooks-exchanges.json"),
                               ("worker-manager", "worker-manager-exchanges.json")):
        document = json.loads((REFERENCE / reference).read_text())
        declared = [full_name(name) for name in SERVICE_EXCHANGES[service]]
        ours = [full_name(name) for name in OUR_QUEUE_EXCHANGES] if service == "queue" else []
        assert declared == [document["exchangePrefix"] + entry["exchange"] for entry in document["entries"]] + ours
    assert len(set(ALL_EXCHANGES)) == len(ALL_EXCHANGES) == 25
    assert full_name("task-group-stalled") == "exchange/taskcluster-queue/v1/task-group-stalled"


def test_what_the_queue_publishes_is_declared():
    assert {full_name(name) for name in PUBLISHED} <= set(ALL_EXCHANGES)


def test_names_match_the_official_clients():
    hooks = taskcluster.HooksEvents({"rootUrl": "https://tc.example.com"})
    assert hooks.hookCreated()["exchange"] == full_name("hook-created") == "exchange/taskcluster-hooks/v1/hook-created"
    queue = taskcluster.QueueEvents({"rootUrl": "https://tc.example.com"})
    assert queue.taskPending()["exchange"] == full_name("task-pending")
    assert short_name(full_name("worker-running")) == "worker-running" and short_name("task-defined") == "task-defined"
