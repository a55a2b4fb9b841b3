"""16 workers race for 500 tasks through the HTTP API: each task is claimed exactly once."""

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.domain.ids import new_slugid

TASKS = 500
CLAIMERS = 16


@pytest.mark.slow
def test_every_task_is_claimed_exactly_once(own_server, new_task, task_queue_id):
    server = own_server
    creator = server.client()
    task_ids = [new_slugid() for _ in range(TASKS)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda task_id: creator.createTask(task_id, new_task()), task_ids))

    claims: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def worker(number: int) -> None:
        client = server.client()
        empty_polls = 0
        while empty_polls < 2:
            answer = client.claimWork(task_queue_id, {"workerGroup": "race", "workerId": f"w{number}",
                                                      "tasks": 1 + number % 4})
            empty_polls = 0 if answer["tasks"] else empty_polls + 1
            for claim in answer["tasks"]:
                task_id, run_id = claim["status"]["taskId"], claim["runId"]
                with lock:
                    claims.append((task_id, run_id, f"w{number}"))
                client.reportCompleted(task_id, str(run_id))

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(CLAIMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)

    per_run = Counter((task_id, run_id) for task_id, run_id, _ in claims)
    assert [run for run, count in per_run.items() if count > 1] == []       # no double claims
    assert {task_id for task_id, _, _ in claims} == set(task_ids)            # no lost tasks
    assert len(claims) == TASKS
    assert len({worker for _, _, worker in claims}) > 1                      # it really was a race
    statuses = [creator.status(task_id)["status"] for task_id in task_ids[::25]]
    assert all(status["state"] == "completed" and len(status["runs"]) == 1 for status in statuses)
    counts = creator.taskQueueCounts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (0, 0)
