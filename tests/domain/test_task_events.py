"""The events a task's transitions announce: exchanges, routing keys, ids and bodies, the
bodies checked against Taskcluster's own message schemas."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.domain import lifecycle, task_events
from shared.domain.ids import new_slugid
from shared.domain.runs import ReasonResolved
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import to_iso, utcnow
from tests.reference import schema_errors

NOW = utcnow()
TASK, GROUP = new_slugid(), new_slugid()
SUMMARY = {"provisionerId": "prov", "workerType": "linux", "taskQueueId": "prov/linux", "schedulerId": "sched",
           "projectId": "none", "taskGroupId": GROUP, "priority": "lowest",
           "deadline": to_iso(NOW + timedelta(hours=1)), "expires": to_iso(NOW + timedelta(days=1))}
NOTICE = {"routes": ["index.project.build", "notify.email"], "tags": {"kind": "build"}}


def changed(before, after):
    return task_events.task_changed(SUMMARY, NOTICE, before, after, to_iso(NOW))


def conforming(event: task_events.Event) -> task_events.Event:
    schema = "task-group-changed-message" if event.exchange.startswith("task-group") else f"{event.exchange}-message"
    assert schema_errors(schema, event.body) == []
    return event


def new(retries: int = 1) -> TaskStatus:
    return TaskStatus.new(TASK, {"retries": retries, "deadline": SUMMARY["deadline"]})


def claimed(status: TaskStatus) -> TaskStatus:
    return lifecycle.claim(status, status.latest.run_id, "wg", "w1", NOW, NOW + timedelta(minutes=20))


def test_create_announces_defined_then_pending_with_routes_as_cc():
    pending = lifecycle.schedule(new(), NOW)
    defined_event, pending_event = map(conforming, changed(None, pending))
    assert defined_event.exchange == "task-defined"
    assert defined_event.routing_key == f"primary.{TASK}._._._.prov.linux.sched.{GROUP}._"
    # As Taskcluster's: the status before any run, though the task was created pending.
    assert (defined_event.body["status"]["state"], defined_event.body["status"]["runs"]) == ("unscheduled", [])
    assert pending_event.exchange == "task-pending"
    assert pending_event.routing_key == f"primary.{TASK}.0._._.prov.linux.sched.{GROUP}._"
    assert pending_event.body["runId"] == 0 and pending_event.body["status"]["state"] == "pending"
    assert pending_event.body["task"] == {"tags": {"kind": "build"}}
    assert pending_event.cc == ["route.index.project.build", "route.notify.email"]
    assert pending_event.exchange_name == "exchange/taskcluster-queue/v1/task-pending"


def test_an_unscheduled_task_is_only_defined():
    assert [event.exchange for event in changed(None, new())] == ["task-defined"]


def test_claim_runs_reclaim_is_silent_and_completion_names_the_worker():
    pending = lifecycle.schedule(new(), NOW)
    running = claimed(pending)
    [event] = map(conforming, changed(pending, running))
    assert event.exchange == "task-running"
    assert event.routing_key.split(".")[2:5] == ["0", "wg", "w1"]
    assert event.body["takenUntil"] == running.latest.taken_until
    assert changed(running, lifecycle.reclaim(running, 0, NOW, NOW + timedelta(minutes=40))) == []
    for reason, exchange in ((ReasonResolved.COMPLETED, "task-completed"), (ReasonResolved.FAILED, "task-failed"),
                             (ReasonResolved.MALFORMED_PAYLOAD, "task-exception")):
        [event] = map(conforming, changed(running, lifecycle.resolve(running, 0, reason, NOW)))
        assert event.exchange == exchange
        assert (event.body["workerGroup"], event.body["workerId"]) == ("wg", "w1")
        assert event.id == f"{TASK}/{exchange}/0"


def test_a_retried_exception_is_announced_then_the_new_run_pending():
    """As Taskcluster 106 publishes a run that a claim's expiry or reportException
    (worker-shutdown, intermittent-task) resolved with retries left."""
    running = claimed(lifecycle.schedule(new(retries=1), NOW))
    retried = lifecycle.resolve(running, 0, ReasonResolved.WORKER_SHUTDOWN, NOW)
    exception, pending = map(conforming, changed(running, retried))
    assert (exception.exchange, exception.body["runId"]) == ("task-exception", 0)
    assert exception.routing_key.split(".")[2:5] == ["0", "wg", "w1"]
    assert (exception.body["workerGroup"], exception.body["workerId"]) == ("wg", "w1")
    assert [run["state"] for run in exception.body["status"]["runs"]] == ["exception", "pending"]
    assert (pending.exchange, pending.body["runId"]) == ("task-pending", 1)
    assert pending.routing_key.split(".")[2:5] == ["1", "_", "_"]


def test_cancel_of_an_unclaimed_task_has_no_worker_words():
    pending = lifecycle.schedule(new(), NOW)
    [event] = map(conforming, changed(pending, lifecycle.cancel(pending, NOW)))
    assert event.exchange == "task-exception"
    assert event.routing_key.split(".")[2:5] == ["0", "_", "_"]
    assert "workerGroup" not in event.body and event.body["status"]["runs"][0]["reasonResolved"] == "canceled"


def test_a_sealed_group_resolved_says_when_it_was_sealed():
    unsealed = conforming(task_events.group_resolved(GROUP, "sched", SUMMARY["expires"], to_iso(NOW), to_iso(NOW)))
    sealed = conforming(task_events.group_resolved(GROUP, "sched", SUMMARY["expires"], to_iso(NOW), to_iso(NOW),
                                                   sealed=to_iso(NOW)))
    assert "sealed" not in unsealed.body and sealed.body["sealed"] == to_iso(NOW)


@pytest.mark.parametrize("make", [task_events.group_resolved, task_events.group_sealed])
def test_group_events(make):
    event = conforming(make(GROUP, "sched", SUMMARY["expires"], to_iso(NOW), to_iso(NOW)))
    assert event.routing_key == f"primary.{GROUP}.sched._"


def test_events_survive_their_stored_form():
    events = tuple(changed(None, lifecycle.schedule(new(), NOW)))
    assert task_events.decode(task_events.encode(events)) == events


def test_artifact_created_names_the_run_and_worker():
    running = claimed(lifecycle.schedule(new(), NOW))
    event = conforming(task_events.artifact_created(SUMMARY, NOTICE, running, 0, {
        "storageType": "object", "name": "public/a", "expires": SUMMARY["expires"], "contentType": "text/plain"},
        to_iso(NOW)))
    assert event.routing_key.split(".")[2:5] == ["0", "wg", "w1"] and event.cc == ["route.index.project.build",
                                                                                  "route.notify.email"]
