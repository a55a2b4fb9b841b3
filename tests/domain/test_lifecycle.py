"""The task state machine, without storage: every transition and its refusals."""

from datetime import timedelta

import pytest

from shared.domain import lifecycle
from shared.domain.errors import Conflict, NotFound
from shared.domain.runs import ReasonCreated, ReasonResolved, RunState, TaskState
from shared.domain.task_status import TaskStatus, render_status
from shared.domain.timestamps import to_iso, utcnow

NOW = utcnow()
LATER = NOW + timedelta(minutes=20)


def fresh(retries: int = 2, deadline=NOW + timedelta(hours=1)) -> TaskStatus:
    return TaskStatus(task_id="abc", retries=retries, retries_left=retries, deadline=to_iso(deadline))


def running(retries: int = 2) -> TaskStatus:
    status = lifecycle.schedule(fresh(retries), NOW)
    return lifecycle.claim(status, 0, "wg", "wid", NOW, LATER)


def test_schedule_adds_one_pending_run_and_is_idempotent():
    status = lifecycle.schedule(fresh(), NOW)
    assert status.state is TaskState.PENDING
    assert status.runs[0].reason_created is ReasonCreated.SCHEDULED
    assert status.runs[0].scheduled == to_iso(NOW)
    assert lifecycle.schedule(status, NOW) is status


def test_claim_makes_the_run_running_with_worker_and_taken_until():
    status = running()
    run = status.runs[0]
    assert (run.state, run.worker_group, run.worker_id) == (RunState.RUNNING, "wg", "wid")
    assert run.started == to_iso(NOW) and run.taken_until == to_iso(LATER)


def test_a_run_is_claimed_once():
    with pytest.raises(Conflict):
        lifecycle.claim(running(), 0, "other", "worker", NOW, LATER)


def test_claim_of_an_unknown_run_is_not_found():
    with pytest.raises(NotFound):
        lifecycle.claim(lifecycle.schedule(fresh(), NOW), 3, "wg", "wid", NOW, LATER)


@pytest.mark.parametrize("reason, state", [
    (ReasonResolved.COMPLETED, RunState.COMPLETED),
    (ReasonResolved.FAILED, RunState.FAILED),
    (ReasonResolved.MALFORMED_PAYLOAD, RunState.EXCEPTION),
])
def test_resolve_sets_state_reason_and_time(reason, state):
    status = lifecycle.resolve(running(), 0, reason, LATER)
    run = status.runs[0]
    assert (run.state, run.reason_resolved, run.resolved) == (state, reason, to_iso(LATER))
    assert len(status.runs) == 1


def test_resolving_again_the_same_way_changes_nothing_but_another_way_conflicts():
    done = lifecycle.resolve(running(), 0, ReasonResolved.COMPLETED, NOW)
    assert lifecycle.resolve(done, 0, ReasonResolved.COMPLETED, LATER) is done
    with pytest.raises(Conflict):
        lifecycle.resolve(done, 0, ReasonResolved.FAILED, LATER)


def test_a_pending_run_cannot_be_resolved():
    with pytest.raises(Conflict):
        lifecycle.resolve(lifecycle.schedule(fresh(), NOW), 0, ReasonResolved.COMPLETED, NOW)


@pytest.mark.parametrize("reason, created", [
    (ReasonResolved.WORKER_SHUTDOWN, ReasonCreated.RETRY),
    (ReasonResolved.INTERMITTENT_TASK, ReasonCreated.TASK_RETRY),
])
def test_retryable_exceptions_add_a_run_while_retries_last(reason, created):
    status = lifecycle.resolve(running(retries=1), 0, reason, NOW)
    assert [run.state for run in status.runs] == [RunState.EXCEPTION, RunState.PENDING]
    assert status.runs[1].reason_created is created and status.retries_left == 0
    status = lifecycle.claim(status, 1, "wg", "wid", NOW, LATER)
    status = lifecycle.resolve(status, 1, reason, NOW)
    assert status.state is TaskState.EXCEPTION and len(status.runs) == 2


def test_other_exceptions_resolve_without_retry():
    status = lifecycle.resolve(running(), 0, ReasonResolved.INTERNAL_ERROR, NOW)
    assert status.state is TaskState.EXCEPTION and status.retries_left == 2


def test_reclaim_extends_a_live_claim_only():
    later_still = LATER + timedelta(minutes=20)
    status = lifecycle.reclaim(running(), 0, NOW, later_still)
    assert status.runs[0].taken_until == to_iso(later_still)
    with pytest.raises(Conflict):  # the claim ran out, even if no one has expired it yet
        lifecycle.reclaim(running(), 0, LATER + timedelta(seconds=1), later_still)
    with pytest.raises(Conflict):
        lifecycle.reclaim(lifecycle.resolve(running(), 0, ReasonResolved.COMPLETED, NOW), 0, NOW, later_still)


def test_cancel_each_unresolved_state_and_leave_resolved_alone():
    unscheduled = lifecycle.cancel(fresh(), NOW)
    assert unscheduled.runs[0].reason_created is ReasonCreated.EXCEPTION
    assert unscheduled.runs[0].reason_resolved is ReasonResolved.CANCELED
    for status in (lifecycle.schedule(fresh(), NOW), running()):
        canceled = lifecycle.cancel(status, NOW)
        assert canceled.state is TaskState.EXCEPTION and len(canceled.runs) == 1
        assert lifecycle.cancel(canceled, NOW) is canceled


def test_rerun_adds_a_run_and_resets_retries_but_leaves_live_tasks_alone():
    exhausted = lifecycle.resolve(running(retries=0), 0, ReasonResolved.FAILED, NOW)
    rerun = lifecycle.rerun(exhausted, LATER)
    assert rerun.runs[1].reason_created is ReasonCreated.RERUN and rerun.state is TaskState.PENDING
    assert rerun.retries_left == 0 == rerun.retries
    assert lifecycle.rerun(rerun, LATER) is rerun
    assert lifecycle.rerun(running(), NOW).state is TaskState.RUNNING


def test_runs_are_capped():
    status = lifecycle.schedule(fresh(retries=0), NOW)
    for run_id in range(lifecycle.MAX_RUNS):
        status = lifecycle.claim(status, run_id, "wg", "wid", NOW, LATER)
        status = lifecycle.resolve(status, run_id, ReasonResolved.FAILED, NOW)
        if run_id < lifecycle.MAX_RUNS - 1:
            status = lifecycle.rerun(status, NOW)
    with pytest.raises(Conflict):
        lifecycle.rerun(status, NOW)


def test_nothing_changes_after_the_deadline():
    past = fresh(deadline=NOW - timedelta(seconds=1))
    resolved = lifecycle.exceed_deadline(past, NOW)
    for status in (past, resolved):
        for transition in (lifecycle.schedule, lifecycle.cancel, lifecycle.rerun):
            with pytest.raises(Conflict):
                transition(status, NOW)


def test_claim_expiry_retries_but_loses_to_a_reclaim():
    status = running(retries=1)
    assert lifecycle.expire_claim(status, 0, NOW) is status  # still within takenUntil
    expired = lifecycle.expire_claim(status, 0, LATER)
    assert expired.runs[0].reason_resolved is ReasonResolved.CLAIM_EXPIRED
    assert expired.runs[1].reason_created is ReasonCreated.RETRY


def test_deadline_exceeded_resolves_unscheduled_pending_and_running():
    after = NOW + timedelta(hours=2)
    for status in (fresh(), lifecycle.schedule(fresh(), NOW), running()):
        resolved = lifecycle.exceed_deadline(status, after)
        assert resolved.state is TaskState.EXCEPTION
        assert resolved.latest.reason_resolved is ReasonResolved.DEADLINE_EXCEEDED
        assert lifecycle.exceed_deadline(status, NOW) is status


def test_render_status_matches_taskclusters_structure():
    definition = {"provisionerId": "p", "workerType": "w", "taskQueueId": "p/w", "schedulerId": "-",
                  "projectId": "none", "taskGroupId": "g", "priority": "lowest",
                  "deadline": "d", "expires": "e"}
    rendered = render_status(definition, running())
    assert rendered["state"] == "running" and rendered["retriesLeft"] == 2
    assert set(rendered["runs"][0]) == {"runId", "state", "reasonCreated", "scheduled", "workerGroup",
                                        "workerId", "takenUntil", "started"}
