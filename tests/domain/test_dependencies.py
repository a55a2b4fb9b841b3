"""Dependency rules: what satisfies `requires`, and which runs resolve a task."""

from datetime import timedelta

import pytest

from shared.domain import lifecycle
from shared.domain.dependencies import became_resolved, resolution_of, satisfies
from shared.domain.runs import ReasonResolved, RunState
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import to_iso, utcnow

NOW = utcnow()


def running(retries=1) -> TaskStatus:
    status = TaskStatus("t", retries, retries, to_iso(NOW + timedelta(hours=1)))
    return lifecycle.claim(lifecycle.schedule(status, NOW), 0, "g", "w", NOW, NOW + timedelta(minutes=5))


@pytest.mark.parametrize("requires, state, expected", [
    ("all-completed", RunState.COMPLETED, True),
    ("all-completed", RunState.FAILED, False),
    ("all-completed", RunState.EXCEPTION, False),
    ("all-resolved", RunState.FAILED, True),
    ("all-resolved", RunState.EXCEPTION, True),
    ("all-resolved", RunState.PENDING, False),
])
def test_satisfies(requires, state, expected):
    assert satisfies(requires, state) is expected


def test_a_retried_run_does_not_resolve_the_task():
    retried = lifecycle.resolve(running(), 0, ReasonResolved.WORKER_SHUTDOWN, NOW)
    assert resolution_of(retried, 0) is None and resolution_of(retried, 1) is None
    assert became_resolved(running(), retried) is None


def test_a_completed_run_resolves_it_and_a_rerun_keeps_that_history():
    done = lifecycle.resolve(running(), 0, ReasonResolved.COMPLETED, NOW)
    assert resolution_of(done, 0) is RunState.COMPLETED
    assert became_resolved(running(), done) == 0
    assert became_resolved(done, done) is None
    rerun = lifecycle.rerun(done, NOW)
    assert resolution_of(rerun, 0) is RunState.COMPLETED and resolution_of(rerun, 1) is None


def test_cancel_of_an_unscheduled_task_resolves_it():
    status = TaskStatus("t", 0, 0, to_iso(NOW + timedelta(hours=1)))
    canceled = lifecycle.cancel(status, NOW)
    assert became_resolved(status, canceled) == 0 and resolution_of(canceled, 0) is RunState.EXCEPTION
