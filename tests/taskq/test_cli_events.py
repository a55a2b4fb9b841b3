"""WAITS ON THE EVENTS ISSUE: `taskq listen` and the worker's cancellation listener against a
Queue that publishes on RabbitMQ: the events issue's session `broker` fixture (tests/conftest.py),
to which every test server publishes (EVENTS_AMQP_URL in its environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import taskcluster

from tests.conftest import ROOT, eventually
from tests.taskq_worker.conftest import processes_running, start_worker  # noqa: F401  (the fixture)


@pytest.fixture
def amqp_url(broker) -> str:
    return broker.url


@pytest.fixture
def events_server(server, amqp_url):
    assert server.env.get("EVENTS_AMQP_URL") == amqp_url, "the test server must publish to the test broker"
    return server


def _listen(server, amqp_url: str, *args: str) -> subprocess.Popen:
    environment = {**os.environ, "TASKCLUSTER_ROOT_URL": server.root_url, "EVENTS_AMQP_URL": amqp_url,
                   "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "taskq", "listen", "--json", *args], cwd=ROOT, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_listen_prints_a_tasks_events_as_json_lines(events_server, amqp_url, new_task, task_id):
    queue = events_server.client()
    listener = _listen(events_server, amqp_url, "--task", task_id, "--count", "3")
    eventually(lambda: "listening on" in listener.stderr.readline(), timeout=30, message="the listener ready")
    queue.createTask(task_id, new_task())
    claim = queue.claimWork(new_task()["taskQueueId"], {"workerGroup": "g", "workerId": "w", "tasks": 1})
    queue.reportCompleted(task_id, str(claim["tasks"][0]["runId"]))
    out, _ = listener.communicate(timeout=30)
    events = [json.loads(line) for line in out.splitlines()]
    assert listener.returncode == 0
    assert [event["exchange"] for event in events][:1] in (["task-defined"], ["task-pending"])
    assert all(event["routingKey"].split(".")[1] == task_id for event in events)


def test_the_worker_hears_a_cancellation_at_once(start_worker, events_server, amqp_url, new_task,  # noqa: F811
                                                task_id):
    queue = events_server.client()
    worker = start_worker(new_task()["taskQueueId"], on=events_server, env={"EVENTS_AMQP_URL": amqp_url})
    eventually(lambda: "listening for cancellations" in worker.log(), timeout=30, message="the listener")
    marker = "600.424242"
    queue.createTask(task_id, new_task(payload={"command": [["sleep", marker]], "maxRunTime": 600}))
    eventually(lambda: processes_running(f"sleep {marker}"), timeout=30, message="the sleep running")
    cancelled_at = time.monotonic()
    queue.cancelTask(task_id)
    eventually(lambda: not processes_running(f"sleep {marker}"), timeout=5, interval=0.1, message="stopped")
    assert time.monotonic() - cancelled_at < 5
    assert "cancellation heard" in worker.log()


def test_listen_to_a_task_prints_no_other_groups_events(events_server, amqp_url, new_task, task_id):
    queue = events_server.client()
    listener = _listen(events_server, amqp_url, "--task", task_id, "--count", "2")
    eventually(lambda: "listening on" in listener.stderr.readline(), timeout=30, message="the listener ready")
    other = taskcluster.slugId()   # a task of another group, which resolves that group
    queue.createTask(other, new_task())
    claim = queue.claimWork(new_task()["taskQueueId"], {"workerGroup": "g", "workerId": "w", "tasks": 1})
    queue.reportCompleted(other, str(claim["tasks"][0]["runId"]))
    queue.createTask(task_id, new_task())
    out, _ = listener.communicate(timeout=30)
    events = [json.loads(line) for line in out.splitlines()]
    assert listener.returncode == 0 and len(events) == 2
    assert all(event["exchange"].startswith("task-") and not event["exchange"].startswith("task-group")
               and event["routingKey"].split(".")[1] == task_id for event in events), events


def test_listen_without_a_broker_says_how_to_name_one(tmp_path):
    environment = {key: value for key, value in os.environ.items() if not key.startswith("EVENTS_")}
    done = subprocess.run([sys.executable, "-m", "taskq", "listen"], cwd=ROOT, capture_output=True, text=True,
                          env={**environment, "TASKCLUSTER_ROOT_URL": "https://queue.example.com",
                               "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: no event broker: set EVENTS_AMQP_URL")
    assert "EVENTS_SERVICE_BUS_NAMESPACE" in done.stderr
