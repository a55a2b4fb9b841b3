"""Claim expiry and deadlines, driven by the sweeps with short timeouts."""

import time
from datetime import timedelta

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import build_services, make_task
from tests.services.test_dependencies import deliver_events


@pytest.fixture
def quick(azurite):
    """Services whose claims last 2 seconds."""
    return build_services(azurite, claim_timeout=2)


def claim(services, task_queue_id):
    return services.claims.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]


def sweep_claims_after(services, seconds: float) -> int:
    time.sleep(seconds)
    return services.claim_expiry.sweep()


def test_an_expired_claim_is_retried_until_retries_run_out(quick, task_queue_id):
    task_id = new_slugid()
    quick.tasks.create(task_id, make_task(task_queue_id, retries=1))
    assert claim(quick, task_queue_id)["runId"] == 0
    assert quick.claim_expiry.sweep() == 0                        # not due yet
    assert sweep_claims_after(quick, 2.2) == 1
    status = quick.tasks.status(task_id)
    assert [run["reasonResolved"] for run in status["runs"][:1]] == ["claim-expired"]
    assert status["runs"][1]["reasonCreated"] == "retry" and status["retriesLeft"] == 0
    assert claim(quick, task_queue_id)["runId"] == 1
    assert sweep_claims_after(quick, 2.2) == 1
    status = quick.tasks.status(task_id)
    assert status["state"] == "exception" and len(status["runs"]) == 2


def test_a_reclaim_keeps_the_claim_alive_across_timeouts(quick, task_queue_id):
    task_id = new_slugid()
    quick.tasks.create(task_id, make_task(task_queue_id))
    claim(quick, task_queue_id)
    for _ in range(3):
        time.sleep(1.2)
        quick.claims.reclaim(task_id, 0)
        assert quick.claim_expiry.sweep() == 0
    assert quick.tasks.status(task_id)["state"] == "running"
    assert quick.resolutions.completed(task_id, 0)["status"]["state"] == "completed"
    assert sweep_claims_after(quick, 2.2) == 0


def test_deadlines_resolve_unscheduled_pending_and_running_tasks(services, task_queue_id):
    soon = to_iso(utcnow() + timedelta(seconds=2))
    running, pending, blocker = new_slugid(), new_slugid(), new_slugid()
    services.tasks.create(running, make_task(task_queue_id, deadline=soon, priority="high"))
    services.tasks.create(pending, make_task(task_queue_id, deadline=soon))
    services.tasks.create(blocker, make_task(task_queue_id))
    unscheduled = new_slugid()
    services.tasks.create(unscheduled, make_task(task_queue_id, deadline=soon, dependencies=[blocker]))
    dependent = new_slugid()
    services.tasks.create(dependent, make_task(task_queue_id, dependencies=[pending], requires="all-resolved"))
    assert claim(services, task_queue_id)["status"]["taskId"] == running
    time.sleep(2.2)
    assert services.deadlines.sweep() == 3
    for task_id in (running, pending, unscheduled):
        status = services.tasks.status(task_id)
        assert status["state"] == "exception"
        assert status["runs"][-1]["reasonResolved"] == "deadline-exceeded"
    assert services.tasks.status(unscheduled)["runs"][0]["reasonCreated"] == "exception"
    counts = services.task_queues.counts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (1, 0)   # only the blocker is left
    deliver_events(services)
    assert services.tasks.status(dependent)["state"] == "pending"   # its dependency resolved
    for call in (services.tasks.cancel, services.tasks.rerun, services.tasks.schedule):
        with pytest.raises(Conflict):
            call(pending)
    with pytest.raises(Conflict):
        services.claims.reclaim(running, 0)
    assert services.deadlines.sweep() == 0


def test_a_claimed_run_row_left_by_a_crash_is_removed_when_the_claim_comes_due(quick, task_queue_id):
    task_id = new_slugid()
    quick.tasks.create(task_id, make_task(task_queue_id))
    taken = claim(quick, task_queue_id)
    quick.resolutions.completed(task_id, 0)
    # A process that died right after the completing write never removed the claimed-run row.
    quick.claims.updater.claims.add(task_queue_id, task_id, 0, taken["takenUntil"], "wg", "w")
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 1
    assert sweep_claims_after(quick, 2.2) == 0                    # nothing to expire: it completed in time
    assert quick.task_queues.counts(task_queue_id)["claimedTasks"] == 0
    assert quick.tasks.status(task_id)["state"] == "completed"
