"""Provisioners and worker types through the official client: Taskcluster's deprecated views
of the task queues, and its deprecated claimTask."""

from datetime import timedelta

import pytest
import requests
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.api.conftest import refusal, temporary
from tests.api.test_task_lifecycle import claim_one, conforms
from tests.reference import schema_errors
from tests.signing import HawkAuth


def taskclusters(schema: str, body: dict) -> dict:
    """`body` conforms to ours and to Taskcluster's schema (whose latest form has dropped the
    `actions` that v106 still answers, always empty)."""
    assert schema_errors(schema, {key: value for key, value in body.items() if key != "actions"}) == []
    return conforms(schema, body)


def test_provisioners_and_worker_types_are_the_task_queues(queue, new_task, task_queue_id):
    provisioner_id, worker_type = task_queue_id.split("/")
    queue.createTask(new_slugid(), new_task())
    claim_one(queue, task_queue_id)
    queue.claimWork(f"{provisioner_id}/other", {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    queues = {entry["taskQueueId"]: entry for entry in queue.listTaskQueues()["taskQueues"]}

    provisioner = taskclusters("provisioner-response", queue.getProvisioner(provisioner_id))
    mine = [queues[task_queue_id], queues[f"{provisioner_id}/other"]]
    assert provisioner == {"provisionerId": provisioner_id, "description": "", "stability": "experimental",
                           "actions": [], "expires": max(entry["expires"] for entry in mine),
                           "lastDateActive": max(entry["lastDateActive"] for entry in mine)}
    listed = conforms("list-provisioners-response", queue.listProvisioners())["provisioners"]
    assert provisioner in listed and [entry["provisionerId"] for entry in listed].count(provisioner_id) == 1

    kinds = taskclusters("list-workertypes-response", queue.listWorkerTypes(provisioner_id))["workerTypes"]
    assert kinds == [{**queues[f"{provisioner_id}/other"], "provisionerId": provisioner_id, "workerType": "other"},
                     {**queues[task_queue_id], "provisionerId": provisioner_id, "workerType": worker_type}]
    assert taskclusters("workertype-response", queue.getWorkerType(provisioner_id, worker_type)) == \
        {**kinds[1], "actions": []}
    assert queue.listWorkerTypes(provisioner_id + "-none") == {"workerTypes": []}
    for call, args in ((queue.getProvisioner, (provisioner_id + "-none",)),
                       (queue.getWorkerType, (provisioner_id, "none")),
                       (queue.getProvisioner, (provisioner_id[:-1],))):   # not a prefix of its queues
        assert refusal(call, *args)[0] == 404


def test_provisioners_and_worker_types_are_listed_in_pages(queue):
    base = f"prov-{new_slugid()[:8].lower().replace('_', 'x')}"
    for provisioner, kind in [(f"{base}-a", "k1"), (f"{base}-a", "k2"), (f"{base}", "k1"), (f"{base}-b", "k1"),
                              (f"{base}-a", "k3")]:
        queue.claimWork(f"{provisioner}/{kind}", {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    seen, query = [], {"limit": 1}
    while True:
        page = queue.listProvisioners(query=query)
        seen += [entry["provisionerId"] for entry in page["provisioners"]]
        if "continuationToken" not in page:
            break
        query = {"limit": 1, "continuationToken": page["continuationToken"]}
    assert [name for name in seen if name.startswith(base)] == [base, f"{base}-a", f"{base}-b"]
    assert len(seen) == len(set(seen))
    first = queue.listWorkerTypes(f"{base}-a", query={"limit": 2})
    rest = queue.listWorkerTypes(f"{base}-a", query={"limit": 2, "continuationToken": first["continuationToken"]})
    assert [entry["workerType"] for entry in first["workerTypes"] + rest["workerTypes"]] == ["k1", "k2", "k3"]
    assert "continuationToken" not in rest


def test_declare_worker_type_and_provisioner(server, queue, task_queue_id):
    """Not in the official client any more: sent signed, as Taskcluster still serves them."""
    provisioner_id, worker_type = task_queue_id.split("/")
    url = server.url(f"/provisioners/{provisioner_id}/worker-types/{worker_type}")
    expires = to_iso(utcnow() + timedelta(days=20))
    declared = requests.put(url, json={"description": "big machines", "stability": "stable", "expires": expires},
                            auth=server.auth)
    assert declared.status_code == 200, declared.text
    body = taskclusters("workertype-response", declared.json())
    assert (body["description"], body["stability"], body["actions"]) == ("big machines", "stable", [])
    assert body["expires"] >= expires
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1}) == {"tasks": []}
    kept = queue.getTaskQueue(task_queue_id)            # a later activity keeps what was declared
    assert (kept["description"], kept["stability"]) == ("big machines", "stable") and kept["expires"] >= expires
    answered = requests.put(server.url(f"/provisioners/{provisioner_id}"), json={"description": "x"},
                            auth=server.auth)
    assert answered.status_code == 200 and answered.json() == queue.getProvisioner(provisioner_id)
    unknown = requests.put(server.url(f"/provisioners/{provisioner_id}-none"), json={}, auth=server.auth)
    assert unknown.status_code == 404

    narrow = HawkAuth(temporary(server.credentials, [f"queue:declare-worker-type:{task_queue_id}#description"]))
    assert requests.put(url, json={"description": "small"}, auth=narrow).status_code == 200
    refused = requests.put(url, json={"stability": "deprecated"}, auth=narrow)
    assert refused.status_code == 403
    assert f"queue:declare-worker-type:{task_queue_id}#stability" in refused.json()["message"]


def test_claim_task_claims_that_pending_run(queue, server, new_task, task_queue_id):
    provisioner_id, worker_type = task_queue_id.split("/")
    first, second = new_slugid(), new_slugid()
    queue.createTask(first, new_task())
    queue.createTask(second, new_task())
    claim = conforms("task-claim-response", queue.claimTask(second, "0", {"workerGroup": "wg", "workerId": "w2"}))
    assert (claim["status"]["taskId"], claim["runId"], claim["workerId"]) == (second, 0, "w2")
    assert claim["task"]["taskQueueId"] == task_queue_id and claim["status"]["state"] == "running"
    assert refusal(queue.claimTask, second, "0", {"workerGroup": "wg", "workerId": "w3"})[0] == 409
    again = queue.claimTask(second, "0", {"workerGroup": "wg", "workerId": "w2"})   # a retry: its claim again
    assert (again["runId"], again["workerId"], again["takenUntil"]) == (0, "w2", claim["takenUntil"])
    assert refusal(queue.claimTask, second, "1", {"workerGroup": "wg", "workerId": "w3"})[0] == 404
    assert refusal(queue.claimTask, new_slugid(), "0", {"workerGroup": "wg", "workerId": "w3"})[0] == 404
    worker = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": claim["credentials"]})
    worker.reclaimTask(second, "0")
    assert worker.reportCompleted(second, "0")["status"]["state"] == "completed"
    # The run claimed is no longer pending: claimWork finds the other one only.
    assert claim_one(queue, task_queue_id, workerId="w1")["status"]["taskId"] == first
    recent = queue.getWorker(provisioner_id, worker_type, "wg", "w2")["recentTasks"]
    assert recent == [{"taskId": second, "runId": 0}]


def test_claim_task_gives_a_quarantined_worker_nothing(queue, new_task, task_queue_id, task_id):
    provisioner_id, worker_type = task_queue_id.split("/")
    queue.declareWorker(provisioner_id, worker_type, "wg", "held", {"expires": to_iso(utcnow() + timedelta(days=1))})
    queue.quarantineWorker(provisioner_id, worker_type, "wg", "held",
                           {"quarantineUntil": to_iso(utcnow() + timedelta(hours=1))})
    queue.createTask(task_id, new_task())
    assert queue.claimTask(task_id, "0", {"workerGroup": "wg", "workerId": "held"}) == {}
    assert queue.status(task_id)["status"]["state"] == "pending"


@pytest.mark.parametrize("scopes, allowed", [
    (["queue:claim-task:{queue}", "queue:worker-id:wg/w1"], True),
    (["queue:claim-task:{queue}"], False),
    (["queue:claim-task:other/kind", "queue:worker-id:wg/w1"], False),
])
def test_claim_task_asks_taskclusters_scopes(server, queue, new_task, task_queue_id, task_id, scopes, allowed):
    queue.createTask(task_id, new_task())
    client = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [scope.format(queue=task_queue_id) for scope in scopes])})
    if allowed:
        assert client.claimTask(task_id, "0", {"workerGroup": "wg", "workerId": "w1"})["runId"] == 0
    else:
        assert refusal(client.claimTask, task_id, "0", {"workerGroup": "wg", "workerId": "w1"})[0] == 403
        assert queue.status(task_id)["status"]["state"] == "pending"
