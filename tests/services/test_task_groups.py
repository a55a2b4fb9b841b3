"""Task groups: sealing, cancelling, and knowing when every member has resolved."""

import time

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import make_task
from tests.services.test_dependencies import deliver_events, run


def test_seal_then_cancel(services, task_queue_id):
    group = new_slugid()
    running, done, pending, unscheduled = (new_slugid() for _ in range(4))
    for task_id in (running, done, pending):
        services.tasks.create(task_id, make_task(task_queue_id, taskGroupId=group))
        time.sleep(0.002)   # "oldest" is by the millisecond of scheduling: make each one older
    services.tasks.create(unscheduled, make_task(task_queue_id, taskGroupId=group, dependencies=[running]))
    claims = services.claims.claim_work(task_queue_id, "wg", "w", 2)["tasks"]
    assert [claim["status"]["taskId"] for claim in claims] == [running, done]  # oldest first
    services.resolutions.completed(done, 0)

    with pytest.raises(Conflict):  # only a sealed group can be canceled
        services.task_groups.cancel(group, services.tasks.cancel_if_unresolved)
    sealed = services.task_groups.seal(group, to_iso(utcnow()))["sealed"]
    assert services.task_groups.seal(group, to_iso(utcnow()))["sealed"] == sealed
    with pytest.raises(Conflict):  # a sealed group takes no more tasks
        services.tasks.create(new_slugid(), make_task(task_queue_id, taskGroupId=group))

    result = services.task_groups.cancel(group, services.tasks.cancel_if_unresolved)
    assert result["taskGroupSize"] == 4 and result["cancelledCount"] == 3
    assert sorted(result["taskIds"]) == sorted([running, pending, unscheduled])
    assert services.tasks.status(done)["state"] == "completed"
    for task_id in (running, pending, unscheduled):
        assert services.tasks.status(task_id)["runs"][-1]["reasonResolved"] == "canceled"
    assert services.task_groups.cancel(group, services.tasks.cancel_if_unresolved)["cancelledCount"] == 0


def test_the_group_knows_when_every_member_resolved(services, task_queue_id):
    group = new_slugid()
    first, second = new_slugid(), new_slugid()
    services.tasks.create(first, make_task(task_queue_id, taskGroupId=group))
    services.tasks.create(second, make_task(task_queue_id, taskGroupId=group, dependencies=[first]))
    table = services.task_groups.groups
    run(services, task_queue_id)
    assert table.load(group).resolved == "" and table.unresolved(group) == [second]
    run(services, task_queue_id, "failed")
    deliver_events(services)
    assert table.load(group).resolved != "" and table.unresolved(group) == []
