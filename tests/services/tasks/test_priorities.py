"""A priority change moves a pending run's hint so that no run is ever left without one: the
new hint first, the row, then the old hint, removed only if nobody wrote it again. Each test
stops a change between two of its writes (a process dying there) or interleaves two changes,
then shows the run is claimed, once, at the priority its row says."""

from __future__ import annotations

import pytest

from shared.domain.ids import new_slugid
from shared.domain.task_definition import priority_rank
from tests.conftest import make_task, two_processes


class Died(Exception):
    """The process stopped here."""


def hints_of(services, task_queue_id: str, task_id: str) -> list[int]:
    """The priority ranks of the task's hints in storage (those of claims deleted first)."""
    services.work_claimer.pending_table.flush_removals()
    return sorted(hint.priority_rank for hint in services.work_claimer.pending_table.page(task_queue_id, None, 100)
                  if hint.task_id == task_id)


def claimed(services, task_queue_id: str, count: int = 1) -> list[str]:
    return [claim["status"]["taskId"] for claim in
            services.work_claimer.claim_work(task_queue_id, "wg", "w", count)["tasks"]]


def test_dying_after_the_new_hint_leaves_the_task_claimable_where_it_was(task_queue_id):
    first, second = two_processes()
    task_id, other = new_slugid(), new_slugid()
    first.task_calls.create(task_id, make_task(task_queue_id, priority="low"))
    first.task_calls.create(other, make_task(task_queue_id, priority="medium"))
    table = first.priorities.task_table

    def dies(*args, **kwargs):
        raise Died()
    table.save_priority = dies
    with pytest.raises(Died):
        first.priorities.change_task(task_id, "highest")
    assert hints_of(second, task_queue_id, task_id) == [priority_rank("highest"), priority_rank("low")]
    assert second.task_calls.status(task_id)["priority"] == "low"
    # The young hint at `highest` is not the row's: skipped, kept (it might be a row's next).
    assert claimed(second, task_queue_id) == [other]
    assert claimed(second, task_queue_id) == [task_id]
    assert claimed(second, task_queue_id) == []


def test_dying_before_the_old_hint_is_removed_claims_at_the_new_priority(task_queue_id):
    first, second = two_processes()
    task_id, other = new_slugid(), new_slugid()
    first.task_calls.create(task_id, make_task(task_queue_id, priority="lowest"))
    first.task_calls.create(other, make_task(task_queue_id, priority="high"))

    def dies(*args, **kwargs):
        raise Died()
    first.priorities.pending_table.remove_version = dies
    with pytest.raises(Died):
        first.priorities.change_task(task_id, "highest")
    assert second.task_calls.status(task_id)["priority"] == "highest"
    assert hints_of(second, task_queue_id, task_id) == [priority_rank("highest"), priority_rank("lowest")]
    assert claimed(second, task_queue_id) == [task_id]
    assert claimed(second, task_queue_id) == [other]
    assert claimed(second, task_queue_id) == []   # the leftover hint leads to nothing


def test_a_change_back_meanwhile_keeps_the_hint_it_wrote_again(task_queue_id):
    """X changes low -> high; before X removes its old hint, Y changes high -> low, writing the
    hint at low again. X's removal must leave Y's hint, or the pending run has none."""
    x, y = two_processes()
    task_id = new_slugid()
    x.task_calls.create(task_id, make_task(task_queue_id, priority="low"))
    table = x.priorities.pending_table
    real = table.remove_version

    def y_changes_first(*args):
        y.priorities.change_task(task_id, "low")
        real(*args)
    table.remove_version = y_changes_first
    x.priorities.change_task(task_id, "high")
    assert y.task_calls.status(task_id)["priority"] == "low"
    assert priority_rank("low") in hints_of(y, task_queue_id, task_id)
    assert claimed(y, task_queue_id) == [task_id]


def test_a_claimed_run_keeps_its_place_and_a_retry_takes_the_new_one(services, task_queue_id):
    task_id, other = new_slugid(), new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, priority="lowest", retries=1))
    assert claimed(services, task_queue_id) == [task_id]
    services.priorities.change_task(task_id, "highest")
    services.task_calls.create(other, make_task(task_queue_id, priority="high"))
    services.resolutions.exception(task_id, 0, "worker-shutdown")    # run 1: pending, a retry
    assert hints_of(services, task_queue_id, task_id) == [priority_rank("highest")]
    assert claimed(services, task_queue_id) == [task_id]
