"""What each caller may do: Taskcluster's scope expressions on every endpoint (403
InsufficientScopes naming what was required and what the caller had), roles, and the
credentials a claim hands a worker, which act on its own run only and only while it is
theirs, through the official client and real HTTP."""

from __future__ import annotations

import time

import pytest
import requests

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso
from tests.conftest import make_task, start_server
from tests.signing import HawkAuth

from tests.api.conftest import AUTH_SETTINGS, CREDENTIALS, as_client, refusal


def assert_403(status_body: tuple[int, dict], *named: str) -> str:
    status, body = status_body
    assert (status, body["code"]) == (403, "InsufficientScopes"), body
    assert all(text in body["message"] for text in named), body["message"]
    return body["message"]


def alpha_task(task_queue_id: str, **overrides) -> dict:
    """A task the `creator` client may create (its role grants project alpha, scheduler alpha-ci,
    medium priority on every queue, routes index.alpha.*)."""
    return make_task(task_queue_id, **{"projectId": "alpha", "schedulerId": "alpha-ci", "priority": "medium",
                                       "routes": ["index.alpha.build"], **overrides})


def test_without_credentials_only_reading_is_allowed(auth_server, task_queue_id):
    task_id = new_slugid()
    as_client(auth_server, "root").createTask(task_id, make_task(task_queue_id))
    anonymous = as_client(auth_server, None)
    assert anonymous.status(task_id)["status"]["state"] == "pending" and anonymous.task(task_id)
    assert anonymous.ping()["alive"]
    message = assert_403(refusal(anonymous.createTask, new_slugid(), make_task(task_queue_id)),
                         "requires Taskcluster credentials", "queue:create-task:project:none",
                         "queue:scheduler-id:-", "Without credentials, a caller has the scopes", "queue:get-task:*")
    assert "queue:create-task:lowest:" + task_queue_id in message
    for call, args in [(anonymous.claimWork, (task_queue_id, {"workerGroup": "g", "workerId": "w"})),
                       (anonymous.reportCompleted, (task_id, "0")), (anonymous.reclaimTask, (task_id, "0")),
                       (anonymous.cancelTask, (task_id,)), (anonymous.scheduleTask, (task_id,)),
                       (anonymous.sealTaskGroup, (task_id,)), (anonymous.listTaskQueues, ()),
                       (anonymous.quarantineWorker, (*task_queue_id.split("/"), "g", "w",
                                                     {"quarantineUntil": "2030-01-01T00:00:00.000Z"}))]:
        assert_403(refusal(call, *args))
    assert anonymous.status(task_id)["status"]["state"] == "pending"   # nothing happened to it


def test_create_task_needs_the_tasks_scopes_routes_scheduler_project_and_priority(auth_server, task_queue_id):
    creator = as_client(auth_server, "creator")       # its scopes come from the role project:alpha
    assert creator.createTask(new_slugid(), alpha_task(task_queue_id))["status"]["state"] == "pending"
    assert creator.createTask(new_slugid(), alpha_task(task_queue_id, priority="very-low"))  # below medium
    for overrides, missing in [({"scopes": ["secrets:get:prod"]}, "secrets:get:prod"),
                               ({"routes": ["index.beta.build"]}, "queue:route:index.beta.build"),
                               ({"schedulerId": "beta-ci"}, "queue:scheduler-id:beta-ci"),
                               ({"projectId": "beta"}, "queue:create-task:project:beta"),
                               ({"priority": "high"}, f"queue:create-task:high:{task_queue_id}")]:
        task_id = new_slugid()
        assert_403(refusal(creator.createTask, task_id, alpha_task(task_queue_id, **overrides)),
                   "Client ID static/creator", missing, "The client has the scopes", "queue:scheduler-id:alpha-ci")
        assert refusal(creator.status, task_id)[0] == 404                 # nothing was written
    # Seed 001's form of the priority scope, queue:create-task:<priority>/<taskQueueId>, is accepted too.
    assert as_client(auth_server, "seed-form").createTask(new_slugid(), make_task(task_queue_id))
    assert_403(refusal(as_client(auth_server, "seed-form").createTask, new_slugid(),
                       make_task(task_queue_id, priority="low")))


def test_task_and_group_actions_go_by_the_stored_tasks_scheduler_and_project(auth_server, task_queue_id):
    root, creator = as_client(auth_server, "root"), as_client(auth_server, "creator")
    group = new_slugid()
    own, foreign = new_slugid(), new_slugid()
    creator.createTask(own, alpha_task(task_queue_id, taskGroupId=group))
    root.createTask(foreign, make_task(task_queue_id))                  # schedulerId "-", project none
    assert creator.cancelTask(own)["status"]["state"] == "exception"    # queue:cancel-task:alpha-ci/*
    assert_403(refusal(creator.cancelTask, foreign), f"queue:cancel-task:-/{foreign}/{foreign}",
               "queue:cancel-task-in-project:none")
    unscheduled = new_slugid()
    creator.createTask(unscheduled, alpha_task(task_queue_id, taskGroupId=group, dependencies=[foreign]))
    assert creator.scheduleTask(unscheduled)["status"]["state"] == "pending"   # ...-in-project:alpha
    assert_403(refusal(creator.rerunTask, own), f"queue:rerun-task:alpha-ci/{group}/{own}")
    assert root.status(foreign)["status"]["state"] == "pending"
    assert_403(refusal(creator.sealTaskGroup, foreign), f"queue:seal-task-group:-/{foreign}")
    assert creator.sealTaskGroup(group)["sealed"]
    assert creator.cancelTaskGroup(group)["taskGroupId"] == group
    assert_403(refusal(creator.cancelTaskGroup, foreign), f"queue:cancel-task-group:-/{foreign}")


def test_claim_work_needs_the_queue_and_the_worker_id(auth_server, task_queue_id):
    worker = as_client(auth_server, "worker")
    assert worker.claimWork(task_queue_id, {"workerGroup": "workers", "workerId": "w1", "tasks": 1}) == \
        {"tasks": []}
    assert_403(refusal(worker.claimWork, task_queue_id, {"workerGroup": "others", "workerId": "w1"}),
               "queue:worker-id:others/w1")


def claim(server, task_queue_id: str, worker_id: str) -> dict:
    answer = as_client(server, "worker").claimWork(task_queue_id, {"workerGroup": "workers",
                                                                   "workerId": worker_id, "tasks": 1})
    assert len(answer["tasks"]) == 1, answer
    return answer["tasks"][0]


def test_a_claims_credentials_act_on_its_own_run_and_nothing_else(auth_server, task_queue_id):
    root = as_client(auth_server, "root")
    first, second = new_slugid(), new_slugid()
    root.createTask(first, make_task(task_queue_id, scopes=["queue:list-task-queues"]))
    root.createTask(second, make_task(task_queue_id))
    mine, theirs = claim(auth_server, task_queue_id, "a"), claim(auth_server, task_queue_id, "b")
    assert mine["status"]["taskId"] == first and theirs["status"]["taskId"] == second
    credentials = mine["credentials"]
    name, _, until = credentials["clientId"].rpartition("/")
    assert name == f"task-client/{first}/0/on/workers/a/until"
    assert abs(float(until) - parse_iso(mine["takenUntil"]).timestamp()) < 0.0005   # to the millisecond
    worker = as_client(auth_server, credentials)

    assert "taskQueues" in worker.listTaskQueues()                   # the task's own scopes
    assert_403(refusal(worker.reportCompleted, second, "0"), f"queue:resolve-task:{second}/0")
    assert_403(refusal(worker.reclaimTask, second, "0"), f"queue:reclaim-task:{second}/0")
    assert_403(refusal(worker.claimWork, "other-prov/other-queue", {"workerGroup": "workers", "workerId": "a"}),
               "queue:claim-work:other-prov/other-queue")
    assert_403(refusal(worker.createTask, new_slugid(), make_task(task_queue_id)))
    assert_403(refusal(worker.cancelTask, first))

    reclaimed = worker.reclaimTask(first, "0")
    assert reclaimed["credentials"]["clientId"].startswith(f"task-client/{first}/0/on/workers/a/until/")
    assert worker.reportCompleted(first, "0")["status"]["state"] == "completed"
    # Resolved: the run is no longer theirs, with the first credentials or the reclaim's.
    for held in (credentials, reclaimed["credentials"]):
        assert_403(refusal(as_client(auth_server, held).reportFailed, first, "0"), "it is completed")
        assert_403(refusal(as_client(auth_server, held).reclaimTask, first, "0"), "it is completed")
    as_client(auth_server, theirs["credentials"]).reportCompleted(second, "0")


def test_a_worker_cannot_act_on_another_run_of_the_same_task(auth_server, task_queue_id):
    task_id = new_slugid()
    as_client(auth_server, "root").createTask(task_id, make_task(task_queue_id, retries=1))
    first = claim(auth_server, task_queue_id, "a")
    worker_a = as_client(auth_server, first["credentials"])
    worker_a.reportException(task_id, "0", {"reason": "worker-shutdown"})   # retried as run 1
    second = claim(auth_server, task_queue_id, "b")
    assert second["runId"] == 1
    assert_403(refusal(worker_a.reportCompleted, task_id, "1"), f"queue:resolve-task:{task_id}/1")
    assert_403(refusal(worker_a.reportCompleted, task_id, "0"), "it is exception")
    assert as_client(auth_server, second["credentials"]).reportCompleted(task_id, "1")["status"]["state"] == \
        "completed"


def test_a_run_resolved_exception_still_takes_its_workers_artifacts_and_nothing_else(auth_server, task_queue_id):
    """Taskcluster's 25 minutes after an `exception` (a cancel): the worker uploads its log
    with the claim's credentials; a run that completed or failed takes none."""
    root = as_client(auth_server, "root")
    cancelled, failed = new_slugid(), new_slugid()
    root.createTask(cancelled, make_task(task_queue_id))
    root.createTask(failed, make_task(task_queue_id))
    held = {claimed["status"]["taskId"]: as_client(auth_server, claimed["credentials"])
            for claimed in (claim(auth_server, task_queue_id, "a"), claim(auth_server, task_queue_id, "b"))}
    root.cancelTask(cancelled)
    held[failed].reportFailed(failed, "0")
    log = {"storageType": "error", "reason": "file-missing-on-worker", "message": "m",
           "expires": make_task(task_queue_id)["deadline"]}
    assert held[cancelled].createArtifact(cancelled, "0", "public/logs/live.log", log) == {"storageType": "error"}
    assert_403(refusal(held[cancelled].reportCompleted, cancelled, "0"), "it is exception")
    assert_403(refusal(held[cancelled].reclaimTask, cancelled, "0"), "it is exception")
    assert_403(refusal(held[failed].createArtifact, failed, "0", "public/logs/live.log", log), "it is failed")
    assert_403(refusal(held[failed].createArtifact, cancelled, "0", "public/x", log),
               f"queue:create-artifact:{cancelled}/0")


@pytest.fixture(scope="module")
def short_claims(azurite, tmp_path_factory):
    """Another Queue trusting the same clients (so the same issuer key), whose claims last 2 s."""
    server = start_server(azurite, tmp_path_factory.mktemp("short-claims"), TASK_CLAIM_TIMEOUT="2",
                          **AUTH_SETTINGS)
    yield server
    server.stop()


def test_credentials_stop_working_for_their_run_once_its_claim_expired(short_claims, task_queue_id):
    task_id = new_slugid()
    as_client(short_claims, "root").createTask(task_id, make_task(task_queue_id))
    held = claim(short_claims, task_queue_id, "slow")
    time.sleep(2.5)
    message = assert_403(refusal(as_client(short_claims, held["credentials"]).reportCompleted, task_id, "0"))
    assert "has passed" in message or "it is exception" in message, message


def test_one_queues_credentials_do_not_act_on_another_queue(auth_server, short_claims, task_queue_id):
    """Two deployments that trust the same issuer: a run one holds is no run of the other's."""
    task_id = new_slugid()
    as_client(auth_server, "root").createTask(task_id, make_task(task_queue_id))
    held = claim(auth_server, task_queue_id, "a")
    elsewhere = as_client(short_claims, held["credentials"])
    assert_403(refusal(elsewhere.reportCompleted, task_id, "0"), "does not exist on this queue")
    assert_403(refusal(elsewhere.reclaimTask, task_id, "0"), "does not exist on this queue")
    assert_403(refusal(elsewhere.claimWork, task_queue_id, {"workerGroup": "workers", "workerId": "a"}))
    assert as_client(auth_server, held["credentials"]).reportCompleted(task_id, "0")


def test_the_schedulers_calls_need_their_own_scopes_and_createTasks_for_every_task(auth_server, task_queue_id):
    base = f"{auth_server.root_url}/api/scheduler/v1/task-graph"
    graph = {"tasks": {"build": {"task": make_task(task_queue_id)},
                       "test": {"requires": ["build"], "task": make_task(task_queue_id, routes=["index.x"])}}}
    graph_id = new_slugid()
    refused = requests.put(f"{base}/{graph_id}", json=graph)
    assert refused.status_code == 403 and "scheduler:create-task-graph:" + graph_id in refused.json()["message"]
    creator = HawkAuth(CREDENTIALS["creator"])     # may create graphs, not their tasks
    refused = requests.put(f"{base}/{graph_id}", json=graph, auth=creator)
    assert refused.status_code == 403, refused.text[:300]
    assert "queue:scheduler-id:task-graph-scheduler" in refused.json()["message"]
    assert "queue:route:index.x" in refused.json()["message"]
    assert requests.get(f"{base}/{graph_id}/status").status_code == 404   # nothing left behind
    assert requests.put(f"{base}/{graph_id}", json=graph, auth=auth_server.auth).status_code == 200
    assert requests.get(f"{base}/{graph_id}/status").json()["status"]["state"] == "running"   # anyone reads
    extension = {"tasks": {"deploy": {"requires": ["test"], "task": make_task(task_queue_id)}}}
    assert requests.post(f"{base}/{graph_id}/extend", json=extension, auth=creator).status_code == 403
    assert requests.post(f"{base}/{graph_id}/extend", json=extension, auth=auth_server.auth).status_code == 200
