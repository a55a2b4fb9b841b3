"""Claim expiry and deadlines, driven by the sweeps with short timeouts."""

import time
from datetime import timedelta

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.claim_table import ClaimRow
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


def test_deadlines_resolve_unscheduled_pending_and_running_tasks(services, task_queue_id):
    soon = to_iso(utcnow() + timedelta(seconds=2))
    running, pending, blocker = new_slugid(), new_slugid(), new_slugid()
    services.task_calls.create(running, make_task(task_queue_id, deadline=soon, priority="high"))
    services.task_calls.create(pending, make_task(task_queue_id, deadline=soon))
    services.task_calls.create(blocker, make_task(task_queue_id))
    unscheduled = new_slugid()
    services.task_calls.create(unscheduled, make_task(task_queue_id, deadline=soon, dependencies=[blocker]))
    dependent = new_slugid()
    services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[pending], requires="all-resolved"))
    assert claim(services, task_queue_id)["status"]["taskId"] == running
    time.sleep(2.2)
    assert services.deadline_resolver.sweep() == 3
    for task_id in (running, pending, unscheduled):
        status = services.task_calls.status(task_id)
        assert status["state"] == "exception"
        assert status["runs"][-1]["reasonResolved"] == "deadline-exceeded"
    assert services.task_calls.status(unscheduled)["runs"][0]["reasonCreated"] == "exception"
    deliver_events(services)   # a claimed run counts until its resolution is processed
    counts = services.task_queues.counts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (2, 0)   # the blocker and the dependent
    deliver_events(services)
    assert services.task_calls.status(dependent)["state"] == "pending"   # its dependency resolved
    for call in (services.task_calls.cancel, services.task_calls.rerun, services.task_calls.schedule):
        with pytest.raises(Conflict):
            call(pending)
    with pytest.raises(Conflict):
        services.work_claimer.reclaim(running, 0)
    assert services.deadline_resolver.sweep() == 0


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


def test_a_deadline_reads_only_the_tasks_that_may_not_have_resolved_and_a_rerun_one_still_meets_it(
        services, task_queue_id, monkeypatch):
    soon, group_id = to_iso(utcnow() + timedelta(seconds=2)), new_slugid()
    done, rerun, waiting, blocker = new_slugid(), new_slugid(), new_slugid(), new_slugid()
    for task_id in (done, rerun):
        services.task_calls.create(task_id, make_task(task_queue_id, deadline=soon, taskGroupId=group_id))
    services.task_calls.create(blocker, make_task(task_queue_id, taskGroupId=group_id))
    services.task_calls.create(waiting, make_task(task_queue_id, deadline=soon, taskGroupId=group_id,
                                             dependencies=[blocker]))
    for _ in range(2):
        services.resolutions.completed(claim(services, task_queue_id)["status"]["taskId"], 0)
    deliver_events(services)
    services.task_calls.rerun(rerun)                    # pending again, with the deadline it had
    read = []
    apply_if_found = services.deadline_resolver.updater.apply_if_found
    monkeypatch.setattr(services.deadline_resolver.updater, "apply_if_found",
                        lambda task_id, *args, **kwargs: read.append(task_id) or apply_if_found(task_id, *args, **kwargs))
    time.sleep(2.2)
    assert services.deadline_resolver.sweep() == 2         # the rerun one and the one still waiting
    assert sorted(read) == sorted([rerun, waiting])
    assert services.task_calls.status(done)["state"] == "completed"
    for task_id in (rerun, waiting):
        assert services.task_calls.status(task_id)["runs"][-1]["reasonResolved"] == "deadline-exceeded"
    expired = services.task_expiry.sweep(now=utcnow() + timedelta(days=400))
    assert expired == 3                            # each indexed at its expiry, the blocker not yet (no deadline)
    for task_id in (done, rerun, waiting):
        with pytest.raises(Exception, match="not found"):
            services.task_calls.status(task_id)


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
