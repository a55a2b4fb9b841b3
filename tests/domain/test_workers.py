"""Worker states and their legal moves; when a worker has overstayed its lifecycle."""

from datetime import timedelta

import pytest

from shared.domain.errors import Conflict
from shared.domain.timestamps import utcnow
from shared.domain.worker_pools import Lifecycle
from shared.domain.workers import WorkerState, can_move, move, new_worker_id, termination_reason

NOW = utcnow()
LIFECYCLE = Lifecycle(registration_timeout=600, reregistration_timeout=3600, queue_inactivity_timeout=1800)
R, U, S, X = WorkerState.REQUESTED, WorkerState.RUNNING, WorkerState.STOPPING, WorkerState.STOPPED


@pytest.mark.parametrize("current, target", [(R, U), (R, S), (R, X), (U, S), (U, X), (S, X),
                                             (R, R), (U, U), (S, S), (X, X)])
def test_forward_moves_and_repeats_are_legal(current, target):
    assert can_move(current, target) and move(current, target) is target


@pytest.mark.parametrize("current, target", [(U, R), (S, R), (S, U), (X, R), (X, U), (X, S)])
def test_moves_back_are_refused_naming_the_worker(current, target):
    assert not can_move(current, target)
    with pytest.raises(Conflict, match=f"w-1 is {current.value}: it cannot become {target.value}"):
        move(current, target, "w-1")


def test_new_worker_ids_are_distinct_and_follow_taskclusters_pattern():
    ids = {new_worker_id("local") for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("local-") and len(i) <= 38 for i in ids)
    with pytest.raises(ValueError):
        new_worker_id("no spaces")


def test_a_requested_worker_has_until_its_registration_timeout():
    created = NOW - timedelta(seconds=599)
    assert termination_reason(R, NOW, LIFECYCLE, created=created) is None
    reason = termination_reason(R, NOW + timedelta(seconds=1), LIFECYCLE, created=created)
    assert reason == "did not register within registrationTimeout (600 s)"


def test_a_running_worker_must_reregister_and_claim_work():
    created = NOW - timedelta(days=1)
    assert termination_reason(U, NOW, LIFECYCLE, created=created, terminate_after=NOW + timedelta(seconds=1),
                              last_active=NOW - timedelta(seconds=1799)) is None
    assert "reregistrationTimeout" in termination_reason(U, NOW, LIFECYCLE, created=created, terminate_after=NOW)
    assert "queueInactivityTimeout" in termination_reason(U, NOW, LIFECYCLE, created=created,
                                                          last_active=NOW - timedelta(seconds=1800))


def test_static_and_stopping_workers_are_never_timed_out():
    old = NOW - timedelta(days=30)
    assert termination_reason(U, NOW, LIFECYCLE, created=old, terminate_after=old, last_active=old, static=True) is None
    assert termination_reason(S, NOW, LIFECYCLE, created=old, terminate_after=old) is None
