"""createTask of a task waiting on one task at most: its membership, written first, tells
whether it was created before, instead of a read of its row (a refused definition's listing
on the task it names: tests/services/dependencies/test_dependency_tracker.py)."""

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from tests.conftest import make_task


def claim_all(services, task_queue_id) -> list[str]:
    return [claimed["status"]["taskId"]
            for claimed in services.work_claimer.claim_work(task_queue_id, "wg", "w", 4)["tasks"]]


def test_a_new_task_without_dependencies_is_not_read_before_it_is_written(services, task_queue_id, monkeypatch):
    read, load = [], services.task_calls.task_table.load
    monkeypatch.setattr(services.task_calls.task_table, "load", lambda task_id, *a, **k: read.append(task_id) or load(task_id, *a, **k))
    task_id = new_slugid()
    assert services.task_calls.create(task_id, make_task(task_queue_id))["state"] == "pending"
    assert read == []
    assert claim_all(services, task_queue_id) == [task_id]


def test_a_new_task_waiting_on_one_task_reads_that_task_and_not_its_own_row(services, task_queue_id, monkeypatch):
    required = new_slugid()
    services.task_calls.create(required, make_task(task_queue_id))
    read, load = [], services.task_calls.task_table.load
    monkeypatch.setattr(services.task_calls.task_table, "load", lambda task_id, *a, **k: read.append(task_id) or load(task_id, *a, **k))
    task_id = new_slugid()
    assert services.task_calls.create(task_id, make_task(task_queue_id, dependencies=[required]))["state"] == "unscheduled"
    assert task_id not in read and required in read


def test_the_same_create_again_is_the_same_answer_and_another_definition_in_its_group_changes_nothing(
        services, task_queue_id):
    task_id, definition = new_slugid(), make_task(task_queue_id)
    first = services.task_calls.create(task_id, definition)
    assert services.task_calls.create(task_id, definition) == first
    # The hint the second call wrote beside its membership is taken back: one pending, not two.
    assert services.task_queues.pending_count(task_queue_id)["pendingTasks"] == 1
    other_queue = task_queue_id + "-other"
    with pytest.raises(Conflict, match="different definition"):
        services.task_calls.create(task_id, {**definition, "taskQueueId": other_queue, "taskGroupId": task_id})
    assert services.task_queues.pending_count(other_queue)["pendingTasks"] == 0   # no hint was written there
    assert services.task_calls.status(task_id) == first
    assert claim_all(services, task_queue_id) == [task_id]


def test_the_same_create_again_in_the_same_millisecond_keeps_the_hint_both_wrote(services, task_queue_id, monkeypatch):
    # Both calls stamp the run alike, so their hints have one key: the second must not take
    # back the hint the task's own pending run relies on.
    import shared.services.tasks.task_calls as tasks_module
    now = tasks_module.utcnow()
    monkeypatch.setattr(tasks_module, "utcnow", lambda: now)
    task_id, definition = new_slugid(), make_task(task_queue_id)
    first = services.task_calls.create(task_id, definition)
    assert services.task_calls.create(task_id, definition) == first
    assert services.task_queues.pending_count(task_queue_id)["pendingTasks"] == 1
    assert claim_all(services, task_queue_id) == [task_id]


def test_a_task_id_taken_in_another_group_is_refused_and_its_membership_taken_back(services, task_queue_id):
    task_id, definition = new_slugid(), make_task(task_queue_id)
    services.task_calls.create(task_id, definition)
    other_group, other_queue = new_slugid(), task_queue_id + "-other"
    with pytest.raises(Conflict, match="different definition"):
        services.task_calls.create(task_id, {**definition, "taskGroupId": other_group, "taskQueueId": other_queue})
    groups = services.task_groups.group_table
    assert groups.members(other_group, "", 10) == [] and not groups.any_unresolved(other_group)
    assert claim_all(services, other_queue) == []           # the hint written there leads to nothing
    assert services.task_calls.status(task_id)["state"] == "pending"
    assert claim_all(services, task_queue_id) == [task_id]  # still the first definition's, in its queue


def test_a_create_that_died_after_its_membership_is_completed_when_sent_again(services, task_queue_id, monkeypatch):
    task_id, definition = new_slugid(), make_task(task_queue_id)
    add_hints = services.task_calls.creation.updater.add_hints

    def dies(_pending):
        raise RuntimeError("the process died")
    monkeypatch.setattr(services.task_calls.creation.updater, "add_hints", dies)
    with pytest.raises(RuntimeError):
        services.task_calls.create(task_id, definition)
    assert services.task_groups.group_table.members(task_id, "", 10) == [task_id]   # a member, with no row yet
    monkeypatch.setattr(services.task_calls.creation.updater, "add_hints", add_hints)
    assert services.task_calls.create(task_id, definition)["state"] == "pending"
    assert claim_all(services, task_queue_id) == [task_id]
