"""claimWork racing over a connection to storage that drops answers at random: every task
is still created, claimed exactly once and completed, and no call fails."""

import threading
from collections import Counter

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import utcnow
from shared.services.claims.work_claimer import _Worker
from tests.conftest import build_services, make_task
from tests.lossy_proxy import LossyProxy

TASKS = 120
CLAIMERS = 8


@pytest.mark.slow
def test_claims_survive_answers_lost_on_the_way_back(azurite, task_queue_id):
    proxy = LossyProxy(azurite.ports["table"], loss_rate=0.03, seed=11)
    services = build_services(azurite, storage_connection=proxy.endpoint(azurite.connection_string),
                              claim_work_wait=0)
    task_ids = [new_slugid() for _ in range(TASKS)]
    for task_id in task_ids:
        services.task_calls.create(task_id, make_task(task_queue_id))

    claims: list[tuple[str, int]] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def worker(number: int) -> None:
        empty = 0
        try:
            while empty < 3:
                answer = services.work_claimer.claim_work(task_queue_id, "lossy", f"w{number}", 1 + number % 3)
                empty = 0 if answer["tasks"] else empty + 1
                for claim in answer["tasks"]:
                    with lock:
                        claims.append((claim["status"]["taskId"], claim["runId"]))
                    services.resolutions.completed(claim["status"]["taskId"], claim["runId"])
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(CLAIMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert errors == []
    assert proxy.dropped > 10                                   # answers really were lost
    assert [run for run, count in Counter(claims).items() if count > 1] == []
    assert sorted(task_id for task_id, _ in claims) == sorted(task_ids)
    states = {services.task_calls.status(task_id)["state"] for task_id in task_ids}
    assert states == {"completed"}
    proxy.close()


def test_r8_runs_claimed_before_an_error_are_in_the_answer(services, task_queue_id, monkeypatch):
    """R8: storage fails on one of three claims. The worker must get the runs it did
    claim, rather than an error that leaves those runs claimed by nobody."""
    task_ids = [new_slugid() for _ in range(3)]
    for task_id in task_ids:
        services.task_calls.create(task_id, make_task(task_queue_id))
    updater, real, calls = services.work_claimer.updater, services.work_claimer.updater.apply, []
    lock = threading.Lock()

    def apply(*args, **kwargs):
        with lock:   # the runs of one claimWork are claimed concurrently
            calls.append(args[0])
            failing = len(calls) == 2
        if failing:
            raise ConnectionError("storage went away")
        return real(*args, **kwargs)
    monkeypatch.setattr(updater, "apply", apply)
    answer = services.work_claimer.claim_work(task_queue_id, "wg", "w", 3)
    failed = calls[1]
    claimed = [claim["status"]["taskId"] for claim in answer["tasks"]]
    assert sorted(claimed) == sorted(task_id for task_id in task_ids if task_id != failed)
    assert [services.task_calls.status(task_id)["state"] for task_id in claimed] == ["running"] * 2
    assert services.task_calls.status(failed)["state"] == "pending"


def test_r8_an_error_before_any_claim_is_still_an_error(services, task_queue_id, monkeypatch):
    services.task_calls.create(new_slugid(), make_task(task_queue_id))

    def apply(*args, **kwargs):
        raise ConnectionError("storage went away")
    monkeypatch.setattr(services.work_claimer.updater, "apply", apply)
    with pytest.raises(ConnectionError):
        services.work_claimer.claim_work(task_queue_id, "wg", "w", 3)


def test_a_claimwork_repeated_by_the_same_worker_keeps_the_claim_watched(services, task_queue_id):
    """A worker's claimWork sent twice (a retry after a lost answer, or two threads) reads the
    same hint twice; the second call writes over the claim row of the first and then finds
    the run claimed already, by this worker: the row must stay, at the claim's takenUntil."""
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    [hint] = services.work_claimer.pending_table.peek(task_queue_id, 10)
    [claimed] = services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"]
    again: list = []
    worker = _Worker(services.workers.arrive(task_queue_id, "wg", "w", utcnow()))
    services.work_claimer._claim_hints([hint], worker, again, [])      # the repeated call, late
    assert again == []
    [row] = services.work_claimer.claim_table.due("9999-12-31T00:00:00.000Z", 100)
    assert (row.task_id, row.worker_id, row.taken_until) == (task_id, "w", claimed["takenUntil"])


def test_a_claim_right_after_a_create_in_the_same_process_reads_no_hints(services, task_queue_id, monkeypatch):
    """The hint a createTask wrote joins those its process holds once the task row says the
    run is pending: a worker claiming after each create costs no query of PendingTasks."""
    pending = services.work_claimer.buffer.pending_table
    reads, peek = [], pending.peek
    monkeypatch.setattr(pending, "peek", lambda *args: reads.append(args) or peek(*args))
    claimed = []
    for _ in range(5):
        task_id = new_slugid()
        services.task_calls.create(task_id, make_task(task_queue_id))
        claimed += [claim["status"]["taskId"] == task_id
                    for claim in services.work_claimer.claim_work(task_queue_id, "wg", "w", 4)["tasks"]]
    assert claimed == [True] * 5 and len(reads) == 1   # the first claim read the queue; none since



@pytest.mark.parametrize("winner", ["w", "other"])
def test_a_claim_task_that_loses_the_run_leaves_only_the_winners_watch(services, task_queue_id, monkeypatch, winner):
    """claimTask reads the run pending, then a claimWork takes it before claimTask's write
    (409): the row claimTask wrote goes if another worker won (its watch is its own row), or
    keeps the winning claim's takenUntil if this same worker won (the row is that claim's)."""
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    claimer, won = services.work_claimer, []
    apply = claimer.updater.apply

    def raced(*args, **kwargs):
        monkeypatch.setattr(claimer.updater, "apply", apply)   # once: the claimWork's own goes through
        won.extend(claimer.claim_work(task_queue_id, "wg", winner, 1)["tasks"])
        return apply(*args, **kwargs)
    monkeypatch.setattr(claimer.updater, "apply", raced)
    with pytest.raises(Conflict):
        claimer.claim_task(task_id, 0, "wg", "w")
    rows = claimer.claim_table.due("9999-12-31T00:00:00.000Z", 100)
    assert [(row.task_id, row.worker_id, row.taken_until) for row in rows] == [
        (task_id, winner, won[0]["takenUntil"])]
