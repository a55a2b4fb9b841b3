"""A `local` worker pool served by a real host: the provisioner starts `python -m taskq_worker`
processes for pending tasks, they register, run the tasks and leave when idle; all through
the official clients, the pool's processes sampled all along."""

from __future__ import annotations

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from tests.api.conftest import refusal
from tests.conftest import eventually, make_task
from tests.local_pools import Sampler, environment_of, local_pool, pool_processes

pytestmark = pytest.mark.slow


def create(queue, pool_id: str, *commands: list[str], **fields) -> str:
    task_id = new_slugid()
    queue.createTask(task_id, make_task(pool_id, payload={"command": list(commands), "maxRunTime": 600}, **fields))
    return task_id


def state(queue, task_id: str) -> str:
    return queue.status(task_id)["status"]["state"]


def test_forty_tasks_on_a_pool_of_three_all_complete_never_on_more_than_three_workers(pool_clients, local_pool_id):
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, 3, idle=3)
    sampler = Sampler(pool_id)
    sampler.start()
    tasks = [create(queue, pool_id, ["sleep", "0.3"] if index % 4 == 0 else ["true"]) for index in range(40)]
    eventually(lambda: all(state(queue, task_id) == "completed" for task_id in tasks), timeout=150, interval=1,
               message="40 tasks completed")
    workers = {queue.status(task_id)["status"]["runs"][-1]["workerId"] for task_id in tasks}
    eventually(lambda: not pool_processes(pool_id) and wm.workerPool(pool_id)["currentCapacity"] == 0,
               timeout=3 + 20, interval=0.5, message="the idle pool back to no workers")
    sampler.stopping.set()
    sampler.join()
    assert max(sampler.samples) == 3, f"the pool ran at most {max(sampler.samples)} workers"
    assert len(workers) >= 3 and all(run_count == 1 for run_count in
                                     (len(queue.status(task_id)["status"]["runs"]) for task_id in tasks))
    stopped = wm.listWorkersForWorkerPool(pool_id)["workers"]
    assert {worker["workerId"] for worker in stopped} >= workers
    assert all(worker["state"] == "stopped" for worker in stopped)


def test_a_task_created_as_an_idle_worker_leaves_goes_to_a_new_worker(pool_clients, local_pool_id):
    """The leaving worker's last claimWork may still be waiting at the Queue: it is refused
    the task, which a new worker runs."""
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, 1, idle=1)
    first = create(queue, pool_id, ["true"])
    eventually(lambda: state(queue, first) == "completed", timeout=30, interval=0.2, message="the first task")
    eventually(lambda: not pool_processes(pool_id), timeout=20, interval=0.05, message="the idle worker gone")
    second = create(queue, pool_id, ["true"])
    eventually(lambda: state(queue, second) == "completed", timeout=30, interval=0.2, message="the second task")
    runs = [queue.status(task_id)["status"]["runs"] for task_id in (first, second)]
    assert len(runs[1]) == 1 and runs[1][0]["workerId"] != runs[0][0]["workerId"]


def test_removing_a_worker_that_holds_a_run_retries_the_run_at_once(pool_clients, local_pool_id):
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, 1, idle=30)
    task_id = create(queue, pool_id, ["sleep", "600"], retries=2)
    eventually(lambda: state(queue, task_id) == "running", timeout=30, interval=0.2, message="the task running")
    run = queue.status(task_id)["status"]["runs"][0]
    wm.removeWorker(pool_id, run["workerGroup"], run["workerId"])
    runs = queue.status(task_id)["status"]["runs"]
    assert (runs[0]["state"], runs[0]["reasonResolved"]) == ("exception", "worker-shutdown")
    assert runs[1]["reasonCreated"] == "retry" and runs[1]["state"] in ("pending", "running")
    assert wm.worker(pool_id, run["workerGroup"], run["workerId"])["state"] in ("stopping", "stopped")
    # The pool replaces it once it is gone, and the retried run is taken.
    eventually(lambda: queue.status(task_id)["status"]["runs"][1]["state"] == "running", timeout=40, interval=0.5,
               message="the retried run claimed by a new worker")
    queue.cancelTask(task_id)


def test_a_registration_token_is_spent_once_and_no_task_sees_it(server, pool_clients, local_pool_id):
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, 1, idle=30)
    task_id = create(queue, pool_id, ["sh", "-c", 'test -z "$TASKQ_REGISTRATION_TOKEN$TASKCLUSTER_ACCESS_TOKEN"'])
    [pid] = eventually(lambda: pool_processes(pool_id), timeout=30, message="a worker process")
    started = environment_of(pid)   # the environment it was started with, token included
    eventually(lambda: state(queue, task_id) == "completed", timeout=30, interval=0.2, message="the task completed")
    anonymous = taskcluster.WorkerManager({"rootUrl": server.root_url, "maxRetries": 0})
    status, body = refusal(anonymous.registerWorker, {
        "workerPoolId": pool_id, "providerId": "local", "workerGroup": started["TASKQ_WORKER_GROUP"],
        "workerId": started["TASKQ_WORKER_ID"],
        "workerIdentityProof": {"token": started["TASKQ_REGISTRATION_TOKEN"]}})
    assert (status, body["code"]) == (400, "InputError") and "used already" in body["message"]
    assert body["requestInfo"]["payload"]["workerIdentityProof"] == "(OMITTED)"
    wm.removeWorker(pool_id, started["TASKQ_WORKER_GROUP"], started["TASKQ_WORKER_ID"])
    eventually(lambda: not pool_processes(pool_id), timeout=20, message="the removed worker gone")
