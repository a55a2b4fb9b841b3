"""Task groups: sealing, cancelling, and knowing when every member has resolved."""

import time
from datetime import timedelta

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from tests.conftest import make_task, memory_services, two_processes
from tests.services.dependencies.test_dependency_tracker import deliver_events, run


def test_seal_then_cancel(services, task_queue_id):
    group = new_slugid()
    running, done, pending, unscheduled = (new_slugid() for _ in range(4))
    for task_id in (running, done, pending):
        services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=group))
        time.sleep(0.002)   # "oldest" is by the millisecond of scheduling: make each one older
    services.task_calls.create(unscheduled, make_task(task_queue_id, taskGroupId=group, dependencies=[running]))
    claims = services.work_claimer.claim_work(task_queue_id, "wg", "w", 2)["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [running, done]  # oldest first
    services.resolutions.completed(done, 0)

    with pytest.raises(Conflict):  # only a sealed group can be canceled
        services.task_groups.cancel(group, services.task_calls.cancel_many)
    sealed = services.task_groups.seal(group, to_iso(utcnow()))["sealed"]
    assert services.task_groups.seal(group, to_iso(utcnow()))["sealed"] == sealed
    with pytest.raises(Conflict):  # a sealed group takes no more tasks
        services.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))

    result = services.task_groups.cancel(group, services.task_calls.cancel_many)
    assert result["taskGroupSize"] == 4 and result["cancelledCount"] == 3
    assert sorted(result["taskIds"]) == sorted([running, pending, unscheduled])
    assert services.task_calls.status(done)["state"] == "completed"
    for task_id in (running, pending, unscheduled):
        assert services.task_calls.status(task_id)["runs"][-1]["reasonResolved"] == "canceled"
    assert services.task_groups.cancel(group, services.task_calls.cancel_many)["cancelledCount"] == 0


def test_the_group_knows_when_every_member_resolved(services, task_queue_id):
    group = new_slugid()
    first, second = new_slugid(), new_slugid()
    services.task_calls.create(first, make_task(task_queue_id, taskGroupId=group))
    services.task_calls.create(second, make_task(task_queue_id, taskGroupId=group, dependencies=[first]))
    table = services.task_groups.group_table
    run(services, task_queue_id)
    assert table.load(group).resolved == "" and table.unresolved(group) == [second]
    run(services, task_queue_id, "failed")
    deliver_events(services)
    assert table.load(group).resolved != "" and table.unresolved(group) == []


def test_a_group_sealed_by_another_process_takes_no_task_from_one_that_knew_it_unsealed(task_queue_id):
    here, there = two_processes()
    group = new_slugid()
    here.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))   # this process knows the group
    there.task_groups.seal(group, to_iso(utcnow()))
    refused = [new_slugid() for _ in range(3)]
    for task_id in refused:   # the first in a bucket this process counted in, the others in buckets never used
        with pytest.raises(Conflict, match="sealed"):
            here.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=group))
    assert all(here.task_calls.task_table.load(task_id) is None for task_id in refused)
    assert len(here.task_groups.list(group, "", 1000)[0]["tasks"]) == 1


def test_a_seal_after_the_group_was_read_refuses_the_members_of_that_creation(task_queue_id, monkeypatch):
    here, there = two_processes()
    group = new_slugid()
    here.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))
    check = here.task_groups.check

    def sealed_after_the_check(*args, **kwargs):
        checked = check(*args, **kwargs)
        there.task_groups.seal(group, to_iso(utcnow()))
        return checked
    monkeypatch.setattr(here.task_groups, "check", sealed_after_the_check)
    task_id = new_slugid()
    with pytest.raises(Conflict, match="sealed"):
        here.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=group))
    assert here.task_calls.task_table.load(task_id) is None


def test_a_known_group_is_not_read_again_for_its_next_task(task_queue_id, monkeypatch):
    services = memory_services()
    group = new_slugid()
    services.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))
    reads = []
    load = services.task_groups.group_table.load
    monkeypatch.setattr(services.task_groups.group_table, "load", lambda group_id: reads.append(group_id) or load(group_id))
    services.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))
    assert reads == []


def test_a_group_known_until_its_expiry_is_read_again_then_and_made_anew_if_gone(task_queue_id):
    here, there = two_processes()
    group, soon = new_slugid(), to_iso(utcnow() + timedelta(minutes=30))
    first = make_task(task_queue_id, taskGroupId=group, deadline=soon, expires=soon)
    here.task_calls.create(new_slugid(), first)
    there.task_groups.group_table.forget(group)   # as the expiration does once the group's expiry passed
    later = new_slugid()
    here.task_calls.create(later, make_task(task_queue_id, taskGroupId=group, schedulerId="another-scheduler"))
    assert there.task_groups.get(group)["schedulerId"] == "another-scheduler"
    assert [entry["status"]["taskId"] for entry in there.task_groups.list(group, "", 1000)[0]["tasks"]] == [later]


def test_a_task_refused_by_a_seal_found_late_leaves_no_dependent_and_no_work(task_queue_id):
    """The members' transaction refuses it after the rows written beside it (its listing on
    its dependency, its hint): none of them shows, or runs."""
    here, there = two_processes()
    dependency, group = new_slugid(), new_slugid()
    here.task_calls.create(dependency, make_task(task_queue_id))
    here.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))
    there.task_groups.seal(group, to_iso(utcnow()))
    refused = new_slugid()
    with pytest.raises(Conflict, match="sealed"):
        here.task_calls.create(refused, make_task(task_queue_id, taskGroupId=group, dependencies=[dependency]))
    assert here.task_calls.dependents(dependency, "", 1000)[0]["tasks"] == []
    claimed = {claim["status"]["taskId"] for claim in here.work_claimer.claim_work(task_queue_id, "wg", "w", 8)["tasks"]}
    assert refused not in claimed and dependency in claimed


def test_a_group_named_after_its_task_is_made_without_a_read_and_a_retry_is_answered(task_queue_id, monkeypatch):
    """A task given no group is in the group of its own id, which createTask makes in the
    round trip that would have read it; the create repeated is answered as the first."""
    services = memory_services()
    reads = []
    load = services.task_groups.group_table.load
    monkeypatch.setattr(services.task_groups.group_table, "load", lambda group_id: reads.append(group_id) or load(group_id))
    task_id = new_slugid()
    definition = make_task(task_queue_id, taskGroupId=task_id, schedulerId="lone")
    first = services.task_calls.create(task_id, definition)
    assert reads == []
    assert services.task_groups.get(task_id)["schedulerId"] == "lone"
    assert services.task_calls.create(task_id, definition) == first
    assert [entry["status"]["taskId"] for entry in services.task_groups.list(task_id, "", 10)[0]["tasks"]] == [task_id]


def test_a_task_named_after_a_group_made_by_others_is_checked_against_it(task_queue_id):
    """The group of the task's own id may exist already, made by other tasks (in another
    process): its schedulerId and its seal refuse the task, which leaves nothing behind."""
    here, there = two_processes()
    group = new_slugid()
    there.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=group, schedulerId="first"))
    with pytest.raises(Conflict, match="first"):
        here.task_calls.create(group, make_task(task_queue_id, taskGroupId=group, schedulerId="second"))
    there.task_groups.seal(group, to_iso(utcnow()))
    with pytest.raises(Conflict, match="sealed"):
        here.task_calls.create(group, make_task(task_queue_id, taskGroupId=group, schedulerId="first"))
    assert here.task_calls.task_table.load(group) is None
    assert len(there.task_groups.list(group, "", 10)[0]["tasks"]) == 1


def _other_bucket(task_id: str) -> str:
    """A new taskId whose bucket (first character) is not `task_id`'s."""
    while (other := new_slugid())[0] == task_id[0]:
        pass
    return other


def test_a_lone_group_resolves_with_its_task_without_a_query_over_its_buckets(task_queue_id, monkeypatch):
    services = memory_services()
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id))
    table = services.task_groups.group_table
    assert table.load(task_id).lone
    queries = []
    left = type(table._unresolved).left
    monkeypatch.setattr(type(table._unresolved), "left", lambda *args, **kwargs: queries.append(args) or left(*args, **kwargs))
    assert run(services, task_queue_id) == [task_id]
    assert table.load(task_id).resolved != "" and queries == []


def test_a_task_joining_a_lone_group_ends_its_loneness_before_its_namesake_resolves_it(task_queue_id):
    """Another process adds a task to the group of a task given no group, while the creator
    still remembers the group lone: the namesake's completion leaves the group unresolved."""
    here, there = two_processes()
    task_id = new_slugid()
    here.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id))
    joiner = _other_bucket(task_id)
    there.task_calls.create(joiner, make_task(f"{task_queue_id}-other", taskGroupId=task_id))
    table = there.task_groups.group_table
    assert not table.load(task_id).lone and here.task_groups.group_table.last_known(task_id).lone
    assert run(here, task_queue_id) == [task_id]
    assert table.load(task_id).resolved == "" and table.unresolved(task_id) == [joiner]
    assert run(there, f"{task_queue_id}-other") == [joiner]
    assert table.load(task_id).resolved != ""


def test_a_group_named_by_its_first_task_among_others_is_not_lone(task_queue_id):
    services = memory_services()
    group = new_slugid()
    services.task_calls.create(_other_bucket(group), make_task(task_queue_id, taskGroupId=group))
    services.task_calls.create(group, make_task(task_queue_id, taskGroupId=group))
    assert not services.task_groups.group_table.load(group).lone
    run(services, task_queue_id)
    assert services.task_groups.group_table.load(group).resolved != ""


def _group_events(services, task_group_id: str) -> list[str]:
    return [event.exchange for event in services.bus.published
            if event.exchange.startswith("task-group") and event.body["taskGroupId"] == task_group_id]


def test_a_task_given_no_group_makes_it_with_its_membership_in_one_transaction(task_queue_id, monkeypatch):
    """The group's row shares its partition with the bucket of the task of its id: the row
    and the membership are one transaction, and the task's completion counts the task out and
    marks the group resolved in one more, announced once."""
    services = memory_services()
    table = services.task_groups.group_table
    transactions = []
    submit = type(table._table).submit_transaction
    monkeypatch.setattr(type(table._table), "submit_transaction",
                        lambda self, operations, **kw: transactions.append(operations) or submit(self, operations, **kw))
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id))
    made = [operations for operations in transactions if any(op[1]["RowKey"] == "group" for op in operations)]
    assert len(made) == 1 and {op[1]["RowKey"] for op in made[0]} >= {"group", f"member.{task_id}"}
    assert table.load(task_id).lone and table.members(task_id, "", 10) == [task_id]
    transactions.clear()
    assert run(services, task_queue_id) == [task_id]
    resolved = [operations for operations in transactions if any(op[1]["RowKey"] == "group" for op in operations)]
    assert len(resolved) == 1 and any(op[0] == "delete" for op in resolved[0])
    assert table.load(task_id).resolved != "" and not table.any_unresolved(task_id)
    assert _group_events(services, task_id) == ["task-group-resolved"]


def test_a_lone_groups_row_changed_elsewhere_resolves_it_step_by_step(task_queue_id):
    """The creator's version of the row is out of date (another process sealed the group):
    the one transaction is refused, writing nothing, and the steps one by one resolve the
    group and announce it once."""
    here, there = two_processes()
    task_id = new_slugid()
    here.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id))
    there.task_groups.seal(task_id, to_iso(utcnow()))
    assert run(here, task_queue_id) == [task_id]
    group = there.task_groups.group_table.load(task_id)
    assert group.resolved != "" and group.sealed != ""
    assert _group_events(here, task_id) == ["task-group-resolved"]


def test_a_retried_task_given_no_group_joins_the_group_it_made(task_queue_id):
    """Another process retries the creation (its first answer was lost): the group and the
    membership exist, so it joins as any task would and answers the task as it is."""
    here, there = two_processes()
    task_id = new_slugid()
    definition = make_task(task_queue_id, taskGroupId=task_id)
    first = here.task_calls.create(task_id, definition)
    assert there.task_calls.create(task_id, definition) == first
    assert there.task_groups.group_table.members(task_id, "", 10) == [task_id]
    assert run(there, task_queue_id) == [task_id]
    assert there.task_groups.group_table.load(task_id).resolved != ""


def test_tasks_stamped_one_after_another_write_their_group_row_once(services, task_queue_id, monkeypatch):
    """Each task expires a moment after the one before (clients stamp them so): the group is
    kept a step past the expiry that made it, and joining needs no write of its row."""
    group_id, table, saves = new_slugid(), services.task_groups.group_table, []
    insert, save = table.insert, table.save
    monkeypatch.setattr(table, "insert", lambda group: saves.append("insert") or insert(group))
    monkeypatch.setattr(table, "save", lambda group: saves.append("save") or save(group))
    expiries = []
    for _ in range(5):
        task_id = new_slugid()
        services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=group_id))
        expiries.append(services.task_calls.definition(task_id)["expires"])
        time.sleep(0.002)
    assert saves == ["insert"]
    assert parse_iso(services.task_groups.get(group_id)["expires"]) >= max(map(parse_iso, expiries))
