"""The repair sweep: finishes what a crashed process left, one intent at a time."""

import contextlib
import time
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.dependencies.repairs import MAX_ATTEMPTS
from shared.services.dependencies.resolution_messages import MAX_NAMED
from tests.conftest import follow_ups_lost
from tests.services.dependencies.test_dependency_tracker import create, state

HOLD = timedelta(seconds=1)


def test_r6_an_intent_that_fails_neither_stops_the_others_nor_loops_forever(services, task_queue_id):
    """R6: a damaged intent and one that raises sit before a real repair in the queue. The
    repair is done in the first sweep; the failing intent is tried again later and, after
    MAX_ATTEMPTS, moved to the poison queue with the damaged one."""
    repairs = services.repairs
    repairs.intents.send_raw("not JSON at all")
    repairs.intents.send({"kind": "task-resolved"})           # no taskId: raises every time
    root = create(services, task_queue_id)
    child = create(services, task_queue_id, dependencies=[root], requires="all-resolved")
    with follow_ups_lost(services):                           # cancelled before any claim, and
        services.task_calls.cancel(root)                           # the process dies right after
    time.sleep(1.2)                                           # the repair intent comes due

    assert repairs.sweep(hold=HOLD) >= 1                       # (the child's readiness check may count too)
    assert state(services, child) == "pending"
    for _ in range(MAX_ATTEMPTS):
        time.sleep(HOLD.total_seconds() + 0.2)
        assert repairs.sweep(hold=HOLD) == 0
    assert repairs.intents.receive(32, HOLD) == []
    poisoned = [message.body for message in repairs.poison.receive(32, HOLD)]
    assert sorted(map(str, poisoned)) == sorted(map(str, [{"intent": None}, {"intent": {"kind": "task-resolved"}}]))


def test_a_group_canceled_page_by_page_stands_on_one_intent_a_page_and_leaves_none(services, task_queue_id):
    """cancelTaskGroup resolves runs nobody claimed: one intent names a page of members
    (instead of one sent and deleted per task), and it is withdrawn once each was followed up."""
    group = new_slugid()
    members = [create(services, task_queue_id, taskGroupId=group) for _ in range(12)]
    services.task_groups.seal(group, to_iso(utcnow()))
    calls = _calls_to(services.task_calls.updater.messages.repairs, "send", "delete")
    result = services.task_groups.cancel(group, services.task_calls.cancel_many)
    assert services.dependency_resolver.settled()
    assert result["cancelledCount"] == 12 and calls == {"send": 1, "delete": 1}
    time.sleep(1.2)                            # it would have come due
    assert services.repairs.sweep(hold=HOLD) == 0 and services.repairs.intents.receive(32, HOLD) == []
    assert all(state(services, task_id) == "exception" for task_id in members)


def test_a_page_whose_follow_ups_died_is_followed_up_by_the_repair_sweep(services, task_queue_id):
    group = new_slugid()
    members = [create(services, task_queue_id, taskGroupId=group) for _ in range(6)]
    waiting = create(services, task_queue_id, taskGroupId=new_slugid(), dependencies=members[:1],
                     requires="all-resolved")
    services.task_groups.seal(group, to_iso(utcnow()))
    with follow_ups_lost(services):            # the process dies right after the writes
        assert services.task_groups.cancel(group, services.task_calls.cancel_many)["cancelledCount"] == 6
    assert state(services, waiting) == "unscheduled"
    time.sleep(1.2)                            # the page's intent comes due
    assert services.repairs.sweep(hold=HOLD) == 6
    assert state(services, waiting) == "pending"
    assert services.task_groups.group_table.load(group).resolved


def _calls_to(queue, *names) -> dict:
    """Counts, from now on, the calls of each of `names` on `queue`."""
    calls = dict.fromkeys(names, 0)

    def counting(name, real):
        def counted(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return counted
    for name in names:
        setattr(queue, name, counting(name, getattr(queue, name)))
    return calls


@pytest.mark.parametrize("lost", [False, True])
def test_deadlines_of_a_second_stand_on_one_intent(services, task_queue_id, lost):
    """The deadline resolver resolves a group's second of unclaimed tasks under one intent,
    withdrawn once each was followed up; left, and repaired, when their follow-ups died."""
    deadline = to_iso(utcnow() + timedelta(seconds=1))
    group = new_slugid()
    members = [create(services, task_queue_id, taskGroupId=group, deadline=deadline) for _ in range(5)]
    waiting = create(services, task_queue_id, taskGroupId=new_slugid(), dependencies=members[:1],
                     requires="all-resolved")
    time.sleep(1.2)
    calls = _calls_to(services.task_calls.updater.messages.repairs, "send", "delete")
    with follow_ups_lost(services) if lost else contextlib.nullcontext():
        assert services.deadline_resolver.sweep() == 5
    assert services.dependency_resolver.settled()
    assert calls == {"send": 1, "delete": 0 if lost else 1}
    assert state(services, waiting) == ("unscheduled" if lost else "pending")
    time.sleep(1.2)
    assert services.repairs.sweep(hold=HOLD) == (5 if lost else 0)
    assert state(services, waiting) == "pending" and services.task_groups.group_table.load(group).resolved


def test_one_intent_names_as_many_tasks_as_a_queue_message_holds(services):
    messages = services.task_calls.updater.messages
    intent = messages.intend_many([new_slugid() for _ in range(MAX_NAMED)])   # fits in 64 KiB
    intent.close()                                                            # withdrawn: none joined
    with pytest.raises(ValueError):
        messages.intend_many([new_slugid() for _ in range(MAX_NAMED + 1)])
