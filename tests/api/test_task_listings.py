"""The batch reads (tasks, statuses) and a task queue's pending and claimed runs
(listPendingTasks, listClaimedTasks) through the official client and a real host, paged."""

from __future__ import annotations

from shared.domain.ids import new_slugid
from shared.validation import check_response
from tests.api.conftest import refusal, temporary
from tests.reference import schema_errors

import taskcluster


def conforms(schema: str, body: dict) -> dict:
    assert check_response(schema, body) == [] and schema_errors(schema, body) == []
    return body


def every_page(call, *args, payload=None, key: str = "tasks", limit: int = 2) -> list[list[dict]]:
    pages, token = [], None
    while True:
        query = {"limit": limit, **({"continuationToken": token} if token else {})}
        answer = call(*args, payload=payload, query=query) if payload is not None else call(*args, query=query)
        pages.append(answer[key])
        token = answer.get("continuationToken")
        if not token:
            return pages


def test_tasks_and_statuses_read_many_at_once_in_pages(queue, new_task):
    task_ids = [new_slugid() for _ in range(5)]
    for number, task_id in enumerate(task_ids):
        queue.createTask(task_id, new_task(metadata={**new_task()["metadata"], "name": f"task {number}"}))
    asked = {"taskIds": [task_ids[0], new_slugid(), "not-a-task-id", *task_ids[1:], task_ids[0]]}

    answer = conforms("tasks-response", queue.tasks(asked))
    assert [entry["taskId"] for entry in answer["tasks"]] == task_ids     # unknown ones left out, each once
    assert [entry["task"]["metadata"]["name"] for entry in answer["tasks"]] == [f"task {n}" for n in range(5)]
    statuses = conforms("tasks-statuses-response", queue.statuses(asked))["statuses"]
    assert [(entry["taskId"], entry["status"]["state"]) for entry in statuses] == [(t, "pending") for t in task_ids]

    pages = every_page(queue.statuses, payload=asked, key="statuses")
    assert [entry["taskId"] for page in pages for entry in page] == task_ids
    assert all(len(page) <= 2 for page in pages) and len(pages) >= 3
    assert queue.tasks({"taskIds": []}) == {"tasks": []}
    assert queue.statuses({}) == {"statuses": []}
    # A token that continues no read of these taskIds starts over, as Taskcluster's does.
    assert queue.tasks(payload=asked, query={"continuationToken": "bm9wZQ"}) == answer


def test_pending_runs_are_listed_in_claim_order_and_claimed_ones_with_their_worker(queue, new_task, task_queue_id):
    lowest, high, medium, waiting = (new_slugid() for _ in range(4))
    for task_id, priority in ((lowest, "lowest"), (high, "high"), (medium, "medium")):
        queue.createTask(task_id, new_task(priority=priority))
    queue.createTask(waiting, new_task(dependencies=[lowest]))
    first = conforms("list-pending-tasks-response", queue.listPendingTasks(task_queue_id))
    assert [entry["taskId"] for entry in first["tasks"]] == [high, medium, lowest]
    assert first["tasks"][0]["runId"] == 0 and first["tasks"][0]["task"]["priority"] == "high"
    assert first["tasks"][0]["inserted"] == queue.status(high)["status"]["runs"][0]["scheduled"]
    pages = every_page(queue.listPendingTasks, task_queue_id)
    assert [entry["taskId"] for page in pages for entry in page] == [high, medium, lowest]

    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w7", "tasks": 2})["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [high, medium]
    assert [entry["taskId"] for entry in queue.listPendingTasks(task_queue_id)["tasks"]] == [lowest]
    claimed = conforms("list-claimed-tasks-response", queue.listClaimedTasks(task_queue_id))["tasks"]
    assert sorted(entry["taskId"] for entry in claimed) == sorted([high, medium])
    for entry in claimed:
        assert (entry["runId"], entry["workerGroup"], entry["workerId"]) == (0, "wg", "w7")
        assert entry["claimed"] == queue.status(entry["taskId"])["status"]["runs"][0]["started"]
    pages = every_page(queue.listClaimedTasks, task_queue_id, limit=1)
    assert sorted(entry["taskId"] for page in pages for entry in page) == sorted([high, medium])

    queue.reportCompleted(high, "0")
    assert [entry["taskId"] for entry in queue.listClaimedTasks(task_queue_id)["tasks"]] == [medium]
    assert queue.listClaimedTasks("other-prov/nothing-here") == {"tasks": []}
    assert queue.listPendingTasks("other-prov/nothing-here") == {"tasks": []}


def test_the_listings_ask_for_the_queues_scopes(server, new_task, task_queue_id):
    server.client().createTask(new_slugid(), new_task())
    lister = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": temporary(
        server.credentials, [f"queue:pending-list:{task_queue_id}"])})
    assert len(lister.listPendingTasks(task_queue_id)["tasks"]) == 1
    status, body = refusal(lister.listClaimedTasks, task_queue_id)
    assert status == 403 and f"queue:claimed-list:{task_queue_id}" in body["message"]
