"""The repair sweep: finishes what a crashed process left, one intent at a time."""

import time
from datetime import timedelta

from shared.services.dependencies.repairs import MAX_ATTEMPTS
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
