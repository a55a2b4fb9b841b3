"""The hooks' timer in process, on storage in memory, with the clock given to each sweep: a
timer that runs twice at once, or dies anywhere between creating the task and moving the hook
on, makes each fire once; a refused fire moves on, a failing one is tried again."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso
from tests.conftest import memory_services, two_processes

START = datetime(2031, 3, 1, tzinfo=timezone.utc)
ROLES = json.dumps([{"roleId": "hook-id:g/*", "scopes": ["queue:create-task:project:none", "queue:scheduler-id:-",
                                                         "queue:create-task:lowest:prov/*"]}])


class Died(BaseException):
    """The process stopped here (nothing of it catches this, as nothing runs after a kill)."""


def hook(task_queue_id: str, schedule: list[str], **task) -> dict:
    return {"metadata": {"name": "n", "description": "d", "owner": "o@example.com"}, "schedule": schedule,
            "task": {"taskQueueId": task_queue_id, "payload": {}, **task,
                     "metadata": {"name": "n", "description": "d", "owner": "o@example.com", "source": "https://x"}}}


def created(services, hook_id: str, schedule: list[str], **task) -> str:
    """A hook made at START - 1 s whose tasks go to a queue of their own."""
    task_queue_id = f"prov/{new_slugid()[:8].lower().replace('_', 'a').replace('-', 'b')}x"
    services.hooks.clock = services.hooks.firing.clock = lambda: START - timedelta(seconds=1)
    services.hooks.create("g", hook_id, hook(task_queue_id, schedule, **task), by="tests")
    return task_queue_id


def fires(services, hook_id: str) -> list[dict]:
    return services.hooks.last_fires("g", hook_id, "", 100)[0]["lastFires"]


def pending(services, task_queue_id: str) -> list[str]:
    return [entry["taskId"] for entry in services.task_queues.pending_runs(task_queue_id, "", 100)[0]["tasks"]]


def test_two_timers_at_once_make_one_fire(task_queue_id):
    first, second = two_processes(roles=ROLES)
    queue_id = created(first, "twice", ["0 0 * * * *"])
    at = START + timedelta(seconds=5)
    threads = [threading.Thread(target=services.hook_scheduler.sweep, args=(at,)) for services in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(pending(first, queue_id)) == 1
    assert [fire["result"] for fire in fires(first, "twice")] == ["success"]
    assert first.hooks.status("g", "twice")["nextScheduledDate"] == to_iso(START + timedelta(hours=1))


@pytest.mark.parametrize("dies_in", ["record", "move on"])
def test_a_timer_that_dies_after_creating_the_task_makes_it_once(dies_in):
    first, second = two_processes(roles=ROLES)
    queue_id = created(first, "dying", ["0 0 * * * *"])

    def dies(*args, **kwargs):
        raise Died()
    if dies_in == "record":
        first.hooks.firing.fires.record = dies
    else:
        first.hook_scheduler._move_on = dies
    with pytest.raises(Died):
        first.hook_scheduler._handle(first.hook_scheduler.index.due(START + timedelta(seconds=5), 10)[0],
                                     START + timedelta(seconds=5))
    assert len(pending(second, queue_id)) == 1
    second.hook_scheduler.sweep(START + timedelta(seconds=9))      # the next run, in another process
    assert len(pending(second, queue_id)) == 1
    assert [fire["result"] for fire in fires(second, "dying")] == ["success"]
    assert second.hooks.status("g", "dying")["nextScheduledDate"] == to_iso(START + timedelta(hours=1))


def test_a_refused_fire_is_recorded_and_the_hook_moves_on():
    services = memory_services(roles=ROLES)
    created(services, "refused", ["0 0 * * * *"], scopes=["secrets:get:production"])
    assert services.hook_scheduler.sweep(START + timedelta(minutes=1)) == 1
    [fire] = fires(services, "refused")
    assert fire["result"] == "error" and "InsufficientScopes" in fire["error"]
    assert services.hooks.status("g", "refused")["nextScheduledDate"] == to_iso(START + timedelta(hours=1))


def test_a_fire_that_fails_for_want_of_storage_is_tried_again():
    services = memory_services(roles=ROLES)
    queue_id = created(services, "outage", ["0 0 * * * *"])
    create = services.hooks.firing.task_calls.create

    def outage(*args, **kwargs):
        raise ConnectionError("storage is down")
    services.hooks.firing.task_calls.create = outage
    assert services.hook_scheduler.sweep(START + timedelta(minutes=1)) == 0
    assert services.hooks.status("g", "outage")["nextScheduledDate"] == to_iso(START)
    services.hooks.firing.task_calls.create = create
    assert services.hook_scheduler.sweep(START + timedelta(minutes=2)) == 1
    assert len(pending(services, queue_id)) == 1
    assert [fire["result"] for fire in fires(services, "outage")] == ["success"]   # the same fire's row


def test_a_hook_changed_meanwhile_is_not_moved_on_by_a_stale_row():
    services = memory_services(roles=ROLES)
    queue_id = created(services, "changed", ["0 0 * * * *"])
    services.hooks.update("g", "changed", hook(queue_id, ["0 30 * * * *"]), by="tests")   # from START - 1 s: next 00:30
    assert services.hook_scheduler.sweep(START + timedelta(minutes=10)) == 0   # the 00:00 row is stale
    assert services.hook_scheduler.sweep(START + timedelta(minutes=31)) == 1
    assert services.hooks.status("g", "changed")["nextScheduledDate"] == to_iso(START + timedelta(minutes=90))
