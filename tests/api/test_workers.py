"""Workers through the official client: known from their claims or declared, listed, and
quarantined."""

import time
from datetime import timedelta

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.tables.claim_table import worker_partition
from tests.api.conftest import refusal, temporary
from tests.api.test_task_lifecycle import claim_one, conforms


def split(task_queue_id: str) -> tuple[str, str]:
    provisioner_id, worker_type = task_queue_id.split("/")
    return provisioner_id, worker_type


def quarantine(queue, task_queue_id: str, worker_id: str, until, info: str = "") -> dict:
    body = {"quarantineUntil": to_iso(until), **({"quarantineInfo": info} if info else {})}
    return conforms("worker-response", queue.quarantineWorker(*split(task_queue_id), "wg", worker_id, body))


def test_a_worker_is_known_from_its_claims(queue, new_task, task_queue_id):
    task_id = new_slugid()
    queue.createTask(task_id, new_task())
    claim_one(queue, task_queue_id, workerId="w1")
    worker = conforms("worker-response", queue.getWorker(*split(task_queue_id), "wg", "w1"))
    assert worker["recentTasks"] == [{"taskId": task_id, "runId": 0}]
    assert worker["taskQueueId"] == task_queue_id and worker["actions"] == []
    assert worker["quarantineUntil"] < worker["firstClaim"]   # never quarantined: a time past, as Taskcluster's
    assert worker["firstClaim"] <= worker["lastDateActive"] < worker["expires"]
    listed = conforms("list-workers-response", queue.listWorkers(*split(task_queue_id)))["workers"]
    assert [(entry["workerId"], entry["latestTask"]) for entry in listed] == [("w1", {"taskId": task_id, "runId": 0})]


def test_quarantine_gives_the_worker_no_more_work_and_leaves_it_its_runs(server, queue, new_task, task_queue_id):
    """As in Taskcluster: the run stays running, and the worker may still reclaim and resolve it."""
    held, other = new_slugid(), new_slugid()
    queue.createTask(held, new_task(priority="high"))
    claim = claim_one(queue, task_queue_id, workerId="broken")
    queue.createTask(other, new_task())
    worker = quarantine(queue, task_queue_id, "broken", utcnow() + timedelta(hours=1), "disk full")
    detail = worker["quarantineDetails"][-1]
    signer = server.credentials["clientId"]   # the official client may have made it bytes
    signer = signer.decode() if isinstance(signer, bytes) else signer
    assert (detail["quarantineInfo"], detail["clientId"]) == ("disk full", signer)
    assert worker["quarantineUntil"] == detail["quarantineUntil"] and worker["actions"] == []

    status = queue.status(held)["status"]
    assert [run["state"] for run in status["runs"]] == ["running"] and status["retriesLeft"] == 5
    started = time.monotonic()
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "broken", "tasks": 4}) == {"tasks": []}
    assert time.monotonic() - started < 1.5            # answered at once, without the long poll
    own = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": claim["credentials"]})
    own.reclaimTask(held, "0")
    assert own.reportCompleted(held, "0")["status"]["state"] == "completed"
    assert claim_one(queue, task_queue_id, workerId="healthy")["status"]["taskId"] == other

    quarantined = queue.listWorkers(*split(task_queue_id), query={"quarantined": "true"})["workers"]
    assert [entry["workerId"] for entry in quarantined] == ["broken"]
    free = queue.listWorkers(*split(task_queue_id), query={"quarantined": "false"})["workers"]
    assert [entry["workerId"] for entry in free] == ["healthy"]

    lifted = quarantine(queue, task_queue_id, "broken", utcnow() - timedelta(seconds=1))
    assert lifted["quarantineDetails"][-1]["quarantineInfo"] == "[unspecified]"   # Taskcluster's word for none
    assert all("quarantineUntil" not in entry for entry in queue.listWorkers(*split(task_queue_id))["workers"])
    last = new_slugid()
    queue.createTask(last, new_task())
    assert claim_one(queue, task_queue_id, workerId="broken")["status"]["taskId"] == last


def test_workers_are_listed_in_pages(queue, new_task, task_queue_id):
    for number in range(3):
        queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": f"w{number}", "tasks": 1})
    first = queue.listWorkers(*split(task_queue_id), query={"limit": 2})
    second = queue.listWorkers(*split(task_queue_id), query={"limit": 2,
                                                             "continuationToken": first["continuationToken"]})
    assert [entry["workerId"] for entry in first["workers"] + second["workers"]] == ["w0", "w1", "w2"]
    assert "continuationToken" not in second


def test_workers_of_every_bucket_are_listed_in_key_order_a_page_at_a_time(queue, task_queue_id):
    """A queue's workers are spread over partitions by name; listWorkers still goes through
    them in (workerGroup, workerId) key order, each once, across continuation tokens."""
    names = [(group, f"w{number}") for group in ("wg-b", "wg-a") for number in range(9)]
    assert len({worker_partition(task_queue_id, *name) for name in names}) > 6
    expires = {"expires": to_iso(utcnow() + timedelta(days=1))}
    for group, worker_id in names:
        queue.declareWorker(*split(task_queue_id), group, worker_id, expires)
    quarantine_body = {"quarantineUntil": to_iso(utcnow() + timedelta(hours=1))}
    queue.quarantineWorker(*split(task_queue_id), "wg-b", "w7", quarantine_body)
    listed, query, pages = [], {"limit": 4}, 0
    while True:
        page = conforms("list-workers-response", queue.listWorkers(*split(task_queue_id), query=query))
        listed += [(entry["workerGroup"], entry["workerId"]) for entry in page["workers"]]
        pages += 1
        if "continuationToken" not in page:
            break
        query = {"limit": 4, "continuationToken": page["continuationToken"]}
    assert listed == sorted(names, key=lambda name: f"{name[0]}.{name[1]}") and pages == 5
    quarantined = queue.listWorkers(*split(task_queue_id), query={"quarantined": "true"})["workers"]
    assert [(entry["workerGroup"], entry["workerId"]) for entry in quarantined] == [("wg-b", "w7")]
    assert queue.getWorker(*split(task_queue_id), "wg-a", "w3")["workerId"] == "w3"


def test_unknown_workers_and_bad_input(queue, task_queue_id):
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        queue.getWorker(*split(task_queue_id), "wg", "never-seen")
    assert caught.value.status_code == 404
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        quarantine(queue, task_queue_id, "never-seen", utcnow() + timedelta(hours=1))
    assert caught.value.status_code == 404
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        queue.quarantineWorker(*split(task_queue_id), "wg", "w1", {"quarantineUntil": "tomorrow"})
    assert caught.value.status_code == 400 and "quarantineUntil" in caught.value.body["message"]
    with pytest.raises(taskcluster.TaskclusterRestFailure) as caught:
        queue.listWorkers(*split(task_queue_id), query={"quarantined": "maybe"})
    assert caught.value.status_code == 400 and "quarantined" in caught.value.body["message"]


def test_declare_worker_makes_it_known_and_its_expiry_never_moves_back(server, queue, new_task, task_queue_id):
    later, sooner = utcnow() + timedelta(days=10), utcnow() + timedelta(days=2)
    declared = conforms("worker-response", queue.declareWorker(*split(task_queue_id), "wg", "declared",
                                                               {"expires": to_iso(later)}))
    assert declared["expires"] == to_iso(later) and declared["recentTasks"] == []
    assert queue.getWorker(*split(task_queue_id), "wg", "declared")["expires"] == to_iso(later)
    assert queue.declareWorker(*split(task_queue_id), "wg", "declared", {"expires": to_iso(sooner)})["expires"] == \
        to_iso(later)
    queue.createTask(new_slugid(), new_task())
    claim_one(queue, task_queue_id, workerId="declared")          # a claim keeps the later expiry too
    assert queue.getWorker(*split(task_queue_id), "wg", "declared")["expires"] == to_iso(later)
    assert queue.getTaskQueue(task_queue_id)["expires"] >= to_iso(later)

    narrow = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:declare-worker:{task_queue_id}/wg/other#expires"])})
    assert narrow.declareWorker(*split(task_queue_id), "wg", "other", {"expires": to_iso(sooner)})["workerId"] == \
        "other"
    status, body = refusal(narrow.declareWorker, *split(task_queue_id), "wg", "declared", {"expires": to_iso(sooner)})
    assert status == 403 and f"queue:declare-worker:{task_queue_id}/wg/declared#expires" in body["message"]
    status, body = refusal(queue.declareWorker, *split(task_queue_id), "wg", "x", {"expires": "soon"})
    assert status == 400 and "expires" in body["message"]


def test_declare_worker_extends_its_task_queue(queue, task_queue_id):
    """Taskcluster's declareWorker keeps the worker's queue at least as long as the worker. Ours
    keeps a queue a day past its latest task or claim, so the queue of a task created just now
    outlives any declaration; one known from a claim alone shows the extension."""
    queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    before = queue.getTaskQueue(task_queue_id)["expires"]
    later = to_iso(utcnow() + timedelta(days=10))
    assert before < later
    queue.declareWorker(*split(task_queue_id), "wg", "w1", {"expires": later})
    assert queue.getTaskQueue(task_queue_id)["expires"] >= later
    assert queue.getWorkerType(*split(task_queue_id))["expires"] >= later
    queue.declareWorker(*split(task_queue_id), "wg", "w1", {"expires": before})   # never moved back
    assert queue.getTaskQueue(task_queue_id)["expires"] >= later
