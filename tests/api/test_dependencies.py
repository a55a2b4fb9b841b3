"""Task dependencies through the official Taskcluster client against the local host.

Dependents are unblocked by the host's queue-triggered 'task resolved' handler, which runs
asynchronously (its queue is polled at most every ~2s), so every "becomes pending" is
awaited with `eventually`, a bounded poll. A "stays unscheduled" is checked only once a
canary proves the handler has already processed the resolution in question.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso
from shared.validation import check_response
from tests.conftest import eventually


def state(queue, task_id: str) -> str:
    return queue.status(task_id)["status"]["state"]


def wait_for_state(queue, task_id: str, expected: str, timeout: float = 30) -> dict:
    """Wait until the task is in state `expected`; returns its status then."""
    def reached():
        status = queue.status(task_id)["status"]
        return status if status["state"] == expected else None
    return eventually(reached, timeout, 0.2, message=f"task {task_id} to be {expected}")


def create(queue, new_task, **overrides) -> str:
    task_id = new_slugid()
    queue.createTask(task_id, new_task(**overrides))
    return task_id


def claim_all(queue, task_queue_id: str, expected: int) -> list[dict]:
    """Claim exactly `expected` runs from the queue (the claim must not find more)."""
    claims = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w", "tasks": expected + 1})["tasks"]
    assert len(claims) == expected, [claim["status"]["taskId"] for claim in claims]
    return claims


def run_one(queue, task_queue_id: str, outcome: str = "completed") -> str:
    """Claim the single pending task of the queue and resolve it; returns its taskId."""
    claim = claim_all(queue, task_queue_id, 1)[0]
    task_id = claim["status"]["taskId"]
    getattr(queue, "reportCompleted" if outcome == "completed" else "reportFailed")(task_id, str(claim["runId"]))
    return task_id


def all_dependents(queue, task_id: str, limit: int | None = None) -> list[dict]:
    """Every entry of listDependentTasks, following continuationTokens."""
    entries, token = [], None
    while True:
        query = {**({"limit": limit} if limit else {}), **({"continuationToken": token} if token else {})}
        page = queue.listDependentTasks(task_id, query=query)
        assert check_response("list-dependent-tasks-response", page) == []
        entries += page["tasks"]
        token = page.get("continuationToken")
        if not token:
            return entries


def test_a_chain_runs_in_order(queue, new_task, task_queue_id):
    first = create(queue, new_task)
    second = create(queue, new_task, dependencies=[first])
    third = create(queue, new_task, dependencies=[second])
    assert [state(queue, task) for task in (first, second, third)] == ["pending", "unscheduled", "unscheduled"]
    for task_id, waiting in ((first, second), (second, third)):
        assert run_one(queue, task_queue_id) == task_id
        wait_for_state(queue, waiting, "pending")
    assert run_one(queue, task_queue_id) == third
    statuses = [queue.status(task)["status"] for task in (first, second, third)]
    assert all(status["state"] == "completed" and len(status["runs"]) == 1 for status in statuses)


def test_a_diamond_waits_for_both_sides(queue, new_task, task_queue_id):
    top = create(queue, new_task)
    left = create(queue, new_task, dependencies=[top])
    right = create(queue, new_task, dependencies=[top])
    bottom = create(queue, new_task, dependencies=[left, right])
    run_one(queue, task_queue_id)
    wait_for_state(queue, left, "pending")
    wait_for_state(queue, right, "pending")
    claims = {claim["status"]["taskId"]: claim for claim in claim_all(queue, task_queue_id, 2)}
    assert set(claims) == {left, right}
    # `right` is still running: `bottom` must wait for it even after `left`'s event is handled.
    # A second dependent of `left` alone is the canary that the event was handled.
    canary = create(queue, new_task, dependencies=[left])
    queue.reportCompleted(left, "0")
    wait_for_state(queue, canary, "pending")
    assert state(queue, bottom) == "unscheduled"
    queue.reportCompleted(right, "0")
    status = wait_for_state(queue, bottom, "pending")
    assert len(status["runs"]) == 1 and status["runs"][0]["reasonCreated"] == "scheduled"


FAN = 1000
WORKERS = 2


@pytest.mark.timeout(900)   # about 3 minutes on 2 cores; the default 300 s is too tight a margin
@pytest.mark.slow
def test_fan_out_and_fan_in_of_a_thousand(own_server, new_task, task_queue_id):
    """One root, 1,000 dependents of it, and one sink depending on all 1,000: every task runs
    exactly once, and the sink becomes pending only after the last of the 1,000 resolved."""
    server, queue = own_server, own_server.client()
    # One group and one deadline for all: the group's expiry is written once, not per task.
    group_id = new_slugid()
    fan_task = functools.partial(new_task, taskGroupId=group_id, deadline=new_task()["deadline"])
    root = create(queue, fan_task)
    middle = [new_slugid() for _ in range(FAN)]
    middle_set = set(middle)
    clients = threading.local()

    def client() -> taskcluster.Queue:  # one client (and connection pool) per thread
        if not hasattr(clients, "queue"):
            clients.queue = server.client(maxRetries=3)
        return clients.queue

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda task_id: client().createTask(task_id, fan_task(dependencies=[root])), middle))
    sink = create(queue, fan_task, dependencies=middle)
    assert state(queue, sink) == "unscheduled"

    claims: list[tuple[str, int]] = []
    reported_middle = [0]
    sink_claimed_after: list[int] = []   # how many of the 1,000 had been reported when the sink was claimed
    lock = threading.Lock()
    done = threading.Event()
    errors: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            while not done.is_set():
                answer = client().claimWork(task_queue_id, {"workerGroup": "fan", "workerId": f"w{number}",
                                                            "tasks": 32})
                for claim in answer["tasks"]:
                    task_id, run_id = claim["status"]["taskId"], claim["runId"]
                    with lock:
                        claims.append((task_id, run_id))
                        if task_id == sink:
                            sink_claimed_after.append(reported_middle[0])
                        # Counted as the report is sent: the exact order of the resolutions
                        # and the sink's scheduling is checked below on the server's clock.
                        reported_middle[0] += task_id in middle_set
                    client().reportCompleted(task_id, str(run_id))   # idempotent: safe to retry
                    if task_id == sink:
                        done.set()
        except BaseException as error:  # surfaced by the main thread
            errors.append(error)
            done.set()

    threads = [threading.Thread(target=worker, args=(number,), daemon=True) for number in range(WORKERS)]
    for thread in threads:
        thread.start()
    finished = done.wait(timeout=600)
    done.set()                      # stop the workers even if the sink never ran
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    assert finished, f"the sink never ran; {len(claims)} runs were claimed"

    per_task = Counter(task_id for task_id, _ in claims)
    assert set(per_task) == middle_set | {root, sink}
    assert [task for task, count in per_task.items() if count != 1] == []        # each ran exactly once
    assert all(run_id == 0 for _, run_id in claims)
    assert sink_claimed_after == [FAN]
    # The sink's only run was scheduled (made pending) no earlier than the last resolution
    # among the 1,000: both times come from the server's clock.
    sink_status = queue.status(sink)["status"]
    assert len(sink_status["runs"]) == 1 and sink_status["state"] == "completed"
    runs = {entry["status"]["taskId"]: entry["status"]["runs"] for entry in all_dependents(queue, root)}
    assert set(runs) == middle_set
    assert all(len(task_runs) == 1 and task_runs[0]["state"] == "completed" for task_runs in runs.values())
    last_resolved = max(parse_iso(task_runs[0]["resolved"]) for task_runs in runs.values())
    assert parse_iso(sink_status["runs"][0]["scheduled"]) >= last_resolved
    counts = queue.taskQueueCounts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (0, 0)


def test_all_resolved_runs_after_a_failed_dependency(queue, new_task, task_queue_id):
    failing = create(queue, new_task)
    dependent = create(queue, new_task, dependencies=[failing], requires="all-resolved")
    assert queue.task(dependent)["requires"] == "all-resolved"
    assert run_one(queue, task_queue_id, "failed") == failing
    wait_for_state(queue, dependent, "pending")
    assert run_one(queue, task_queue_id) == dependent


def test_all_completed_waits_through_a_failure_until_a_rerun_completes(queue, new_task, task_queue_id):
    flaky = create(queue, new_task, retries=0)
    dependent = create(queue, new_task, dependencies=[flaky])   # requires: all-completed (the default)
    # Handled in the same pass over `flaky`'s dependents: once it is pending, the failure
    # has been processed, so `dependent` staying unscheduled is a real answer, not a race.
    canary = create(queue, new_task, dependencies=[flaky], requires="all-resolved")
    assert run_one(queue, task_queue_id, "failed") == flaky
    wait_for_state(queue, canary, "pending")
    assert state(queue, dependent) == "unscheduled"
    assert queue.status(flaky)["status"]["state"] == "failed"

    status = queue.rerunTask(flaky)["status"]
    assert status["state"] == "pending" and status["runs"][1]["reasonCreated"] == "rerun"
    claims = {claim["status"]["taskId"]: claim for claim in claim_all(queue, task_queue_id, 2)}
    assert set(claims) == {flaky, canary} and claims[flaky]["runId"] == 1
    queue.reportCompleted(flaky, "1")
    status = wait_for_state(queue, dependent, "pending")
    assert len(status["runs"]) == 1
    assert run_one(queue, task_queue_id) == dependent


def test_created_after_its_dependencies_resolved_is_pending_at_once(queue, new_task, task_queue_id):
    first, second = create(queue, new_task), create(queue, new_task)
    claim_all(queue, task_queue_id, 2)
    queue.reportCompleted(first, "0")
    queue.reportFailed(second, "0")
    later = new_slugid()
    status = queue.createTask(later, new_task(dependencies=[first, second], requires="all-resolved"))["status"]
    assert status["state"] == "pending" and status["runs"][0]["reasonCreated"] == "scheduled"
    # ...but all-completed is not satisfied by the failure: it waits.
    waiting = queue.createTask(new_slugid(), new_task(dependencies=[first, second]))["status"]
    assert waiting["state"] == "unscheduled" and waiting["runs"] == []


def test_schedule_task_forces_an_unscheduled_task(queue, new_task, task_queue_id):
    required = create(queue, new_task)
    forced = create(queue, new_task, dependencies=[required])
    assert state(queue, forced) == "unscheduled"
    answer = queue.scheduleTask(forced)
    assert check_response("task-status-response", answer) == []
    status = answer["status"]
    assert status["state"] == "pending" and status["runs"][0]["reasonCreated"] == "scheduled"
    assert queue.scheduleTask(forced)["status"] == status                   # idempotent
    claims = {claim["status"]["taskId"] for claim in claim_all(queue, task_queue_id, 2)}
    assert claims == {required, forced}
    # The late resolution of `required` must not schedule `forced` again. A second
    # dependent of `required` is the canary that its resolution was handled.
    canary = create(queue, new_task, dependencies=[required])
    queue.reportCompleted(forced, "0")
    queue.reportCompleted(required, "0")
    wait_for_state(queue, canary, "pending")
    final = queue.status(forced)["status"]
    assert final["state"] == "completed" and len(final["runs"]) == 1


def test_a_task_that_depends_on_itself_waits_for_schedule_task(queue, new_task, task_queue_id):
    """Taskcluster allows it: such a task runs only when scheduleTask says so."""
    task_id = new_slugid()
    assert queue.createTask(task_id, new_task(dependencies=[task_id]))["status"]["state"] == "unscheduled"
    assert [dependent["status"]["taskId"] for dependent in queue.listDependentTasks(task_id)["tasks"]] == [task_id]
    assert queue.scheduleTask(task_id)["status"]["state"] == "pending"
    assert [claim["status"]["taskId"] for claim in claim_all(queue, task_queue_id, 1)] == [task_id]
    # Its own resolution must not schedule it again. A second dependent is the canary
    # that the resolution was handled.
    canary = create(queue, new_task, dependencies=[task_id])
    queue.reportCompleted(task_id, "0")
    wait_for_state(queue, canary, "pending")
    final = queue.status(task_id)["status"]
    assert final["state"] == "completed" and len(final["runs"]) == 1


def test_unknown_dependencies_are_a_400_naming_them_and_nothing_is_created(queue, new_task, task_id):
    known = create(queue, new_task)
    missing = sorted([new_slugid(), new_slugid()])
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.createTask(task_id, new_task(dependencies=[known, *missing]))
    assert error.value.status_code == 400
    assert error.value.body["code"] == "InputError"   # Taskcluster's code for a rule no schema says
    message = error.value.body["message"]
    assert all(unknown in message for unknown in missing) and known not in message
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.status(task_id)
    assert error.value.status_code == 404
    assert queue.listDependentTasks(known)["tasks"] == []


def test_dependents_are_listed_in_pages(queue, new_task):
    required = create(queue, new_task)
    dependents = {create(queue, new_task, dependencies=[required]) for _ in range(5)}
    create(queue, new_task)   # not a dependent
    seen, token, pages = [], None, 0
    while True:
        query = {"limit": 2, **({"continuationToken": token} if token else {})}
        page = queue.listDependentTasks(required, query=query)
        assert check_response("list-dependent-tasks-response", page) == []
        assert page["taskId"] == required and len(page["tasks"]) <= 2
        for entry in page["tasks"]:
            assert entry["task"]["dependencies"] == [required]
            assert entry["status"]["state"] == "unscheduled"
        seen += [entry["status"]["taskId"] for entry in page["tasks"]]
        pages += 1
        token = page.get("continuationToken")
        if not token:
            break
    assert set(seen) == dependents and len(seen) == 5 and pages == 3
    everything = queue.listDependentTasks(required)
    assert {entry["status"]["taskId"] for entry in everything["tasks"]} == dependents
    assert "continuationToken" not in everything
    with pytest.raises(taskcluster.TaskclusterRestFailure) as error:
        queue.listDependentTasks(new_slugid())
    assert error.value.status_code == 404
