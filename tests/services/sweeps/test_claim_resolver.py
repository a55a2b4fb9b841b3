"""The claim resolver: claims past `takenUntil`, driven by the sweep with short timeouts."""

import time
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.claim_table import ClaimRow, worker_partition
from tests.conftest import follow_ups_lost, make_task, memory_services
from tests.services.dependencies.test_dependency_tracker import deliver_events


@pytest.fixture
def quick():
    """Services whose claims last 2 seconds."""
    return memory_services(claim_timeout=2)


def claim(services, task_queue_id):
    return services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]


def sweep_claims_after(services, seconds: float) -> int:
    time.sleep(seconds)
    return services.claim_resolver.sweep()


def test_an_expired_claim_is_retried_until_retries_run_out(quick, task_queue_id):
    task_id = new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id, retries=1))
    assert claim(quick, task_queue_id)["runId"] == 0
    assert quick.claim_resolver.sweep() == 0                        # not due yet
    assert sweep_claims_after(quick, 2.2) == 1
    status = quick.task_calls.status(task_id)
    assert [run["reasonResolved"] for run in status["runs"][:1]] == ["claim-expired"]
    assert status["runs"][1]["reasonCreated"] == "retry" and status["retriesLeft"] == 0
    assert claim(quick, task_queue_id)["runId"] == 1
    assert sweep_claims_after(quick, 2.2) == 1
    status = quick.task_calls.status(task_id)
    assert status["state"] == "exception" and len(status["runs"]) == 2


def test_expired_claims_of_workers_in_every_bucket_of_the_queue_are_retried(quick, task_queue_id):
    workers = [f"w{number}" for number in range(24)]
    assert len({worker_partition(task_queue_id, "wg", worker) for worker in workers}) > 8
    task_ids = [new_slugid() for _ in workers]
    for task_id in task_ids:
        quick.task_calls.create(task_id, make_task(task_queue_id, retries=1))
    for worker in workers:
        assert len(quick.work_claimer.claim_work(task_queue_id, "wg", worker, 1)["tasks"]) == 1
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 24
    assert quick.claim_resolver.sweep(now=utcnow() + timedelta(minutes=1)) == 24
    for task_id in task_ids:
        runs = quick.task_calls.status(task_id)["runs"]
        assert [(run["state"], run.get("reasonResolved")) for run in runs] == [("exception", "claim-expired"),
                                                                               ("pending", None)]
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 0   # every bucket's rows removed


def test_a_reclaim_keeps_the_claim_alive_across_timeouts(quick, task_queue_id):
    task_id = new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id))
    claim(quick, task_queue_id)
    for _ in range(3):
        time.sleep(1.2)
        quick.work_claimer.reclaim(task_id, 0)
        assert quick.claim_resolver.sweep() == 0
    assert quick.task_calls.status(task_id)["state"] == "running"
    assert quick.resolutions.completed(task_id, 0)["status"]["state"] == "completed"
    assert sweep_claims_after(quick, 2.2) == 0


def test_a_resolution_whose_announcement_was_lost_is_announced_when_its_claim_comes_due(quick, task_queue_id):
    task_id, dependent = new_slugid(), new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id))
    quick.task_calls.create(dependent, make_task(task_queue_id, dependencies=[task_id]))
    claim(quick, task_queue_id)
    with follow_ups_lost(quick):   # the process dies right after the completing write
        quick.resolutions.completed(task_id, 0)
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 1   # the claim row stands for it
    assert sweep_claims_after(quick, 2.2) == 0                     # nothing to expire: it completed in time
    assert deliver_events(quick) == 1                              # ... but it was announced again
    assert quick.task_calls.status(dependent)["state"] == "pending"
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 0
    assert quick.claim_resolver.sweep(now=utcnow() + timedelta(minutes=5)) == 0
    assert deliver_events(quick) == 0                              # handled once: nothing left to announce


def test_a_reclaim_whose_claim_row_did_not_follow_is_not_expired(quick, task_queue_id):
    task_id = new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id))
    claimed = claim(quick, task_queue_id)
    time.sleep(1.5)
    claim_rows = quick.work_claimer.claim_table
    real, lost = claim_rows.add, []
    claim_rows.add = lost.append   # the process dies after the reclaim's write, before the row moves
    try:
        reclaimed = quick.work_claimer.reclaim(task_id, 0)
    finally:
        claim_rows.add = real
    assert lost and reclaimed["takenUntil"] > claimed["takenUntil"]
    # The row comes due at the first takenUntil: the sweep finds the claim good and moves the row.
    assert sweep_claims_after(quick, 0.8) == 0
    assert quick.task_calls.status(task_id)["state"] == "running"
    assert claim_rows.due(reclaimed["takenUntil"], 10) == \
        [ClaimRow(task_queue_id, task_id, 0, "wg", "w", reclaimed["takenUntil"])]
    # At the reclaimed takenUntil it does expire.
    assert quick.claim_resolver.sweep(now=parse_iso(reclaimed["takenUntil"]) + timedelta(milliseconds=1)) == 1
    assert quick.task_calls.status(task_id)["runs"][0]["reasonResolved"] == "claim-expired"


def test_a_claim_row_of_a_claimer_that_lost_the_race_is_removed(quick, task_queue_id):
    task_id = new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id))
    claim(quick, task_queue_id)
    # A second claimer wrote its row, lost the race, and died before removing it.
    quick.work_claimer.claim_table.add([ClaimRow(task_queue_id, task_id, 0, "wg", "loser", to_iso(utcnow()))])
    assert quick.work_claimer.claim_table.held_by(task_queue_id, "wg", "loser") == [(task_id, 0)]
    assert quick.claim_resolver.sweep() == 0
    assert quick.work_claimer.claim_table.held_by(task_queue_id, "wg", "loser") == []
    assert quick.work_claimer.claim_table.held_by(task_queue_id, "wg", "w") == [(task_id, 0)]
    assert quick.task_calls.status(task_id)["state"] == "running"


def test_a_stale_hint_of_a_run_this_worker_resolved_keeps_the_resolution_watched(quick, task_queue_id):
    """The process died after a completion's write, and with it the claimed hint's deletion:
    the same worker's next claimWork meets that hint and writes over the run's claim row,
    which stands for the unprocessed resolution. The row must stay, as it was."""
    from shared.services.claims.work_claimer import _Worker
    task_id, dependent = new_slugid(), new_slugid()
    quick.task_calls.create(task_id, make_task(task_queue_id))
    quick.task_calls.create(dependent, make_task(task_queue_id, dependencies=[task_id]))
    [hint] = quick.work_claimer.pending_table.peek(task_queue_id, 10)
    claim(quick, task_queue_id)
    with follow_ups_lost(quick):
        quick.resolutions.completed(task_id, 0)
    worker = _Worker(quick.workers.arrive(task_queue_id, "wg", "w", utcnow()))
    assert quick.work_claimer._claim_hints([hint], worker, [], []) == (False, False)   # nothing claimed
    assert sweep_claims_after(quick, 2.2) == 0
    assert deliver_events(quick) == 1                              # the resolution, announced again
    assert quick.task_calls.status(dependent)["state"] == "pending"
