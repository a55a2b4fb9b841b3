"""Dependency rules: what satisfies `requires`, which runs resolve a task, and the terms a row
keeps of the one task it waits on."""

from datetime import timedelta

import pytest

from shared.domain import lifecycle
from shared.domain.dependencies import (became_resolved, insertion_waves, resolution_of, satisfies, sole_dependency,
                                        terms_met)
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


def _definitions(**requires):
    """`_definitions(a=[], b=["a"])`: definitions keyed by name with those dependencies."""
    return {name: {"dependencies": list(required)} for name, required in requires.items()}


def test_insertion_waves_put_every_dependent_before_what_it_depends_on():
    definitions = _definitions(root=[], left=["root"], right=["root"], join=["left", "right", "root"],
                               chain=["join"], alone=[], selfish=["selfish", "root"])
    waves = insertion_waves(definitions)
    wave_of = {task_id: number for number, wave in enumerate(waves) for task_id in wave}
    assert sorted(wave_of) == sorted(definitions)
    for task_id, definition in definitions.items():
        for required in definition["dependencies"]:
            if required != task_id:
                assert wave_of[task_id] < wave_of[required], (task_id, required)
    assert waves[-1] == ["root"]


def test_insertion_waves_ignore_dependencies_outside_the_batch_and_keep_a_cycle_last():
    assert insertion_waves(_definitions(a=["elsewhere"], b=["a"])) == [["b"], ["a"]]
    assert insertion_waves(_definitions(x=[], a=["b"], b=["a"])) == [["x"], ["a", "b"]]


def test_a_row_keeps_the_terms_of_the_one_task_it_waits_on():
    assert sole_dependency({"dependencies": ["a", "a"], "requires": "all-resolved"}) == ("a", "all-resolved")
    assert sole_dependency({"dependencies": ["a", "b"], "requires": "all-completed"}) == ()
    assert sole_dependency({"dependencies": [], "requires": "all-completed"}) == ()


@pytest.mark.parametrize("sole, required, state, expected", [
    (("a", "all-completed"), "a", RunState.COMPLETED, True),
    (("a", "all-completed"), "a", RunState.FAILED, False),     # a listing that says all-resolved does not decide
    (("a", "all-resolved"), "a", RunState.FAILED, True),
    (("a", "all-completed"), "b", RunState.COMPLETED, False),  # listed on a task it does not wait on
    ((), "a", RunState.COMPLETED, False),                       # waits on several, or on none
    (None, "a", RunState.COMPLETED, True),                      # a row from before rows kept terms
])
def test_a_listed_dependent_is_scheduled_on_its_rows_terms(sole, required, state, expected):
    assert terms_met(sole, required, state) is expected
