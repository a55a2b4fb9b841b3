"""The watchdog on Azurite: each of its findings produced by breaking the system on purpose
(a lost message, a queue nobody serves, a worker gone with its claim, a group merely slow),
what it costs createTask, and how its index items behave. The stall time is short (2 s) and
the sweep is called as its timer would, until what it should find is found."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.services.wiring import Services
from tests.conftest import build_services, eventually, make_task, two_processes_on

STALL = 2   # seconds


@pytest.fixture
def services(azurite) -> Services:
    return build_services(azurite, watchdog_stall=STALL)


def state(services, task_id: str) -> str:
    return services.task_calls.status(task_id)["state"]


def found(services, group_id: str, wanted: str, timeout: float = 20) -> dict:
    """Sweep as the timer does until the group's verdict is `wanted`; the view then."""
    def look():
        services.watchdog.sweep()
        view = services.stall_reports.view(group_id)
        return view if view["state"] == wanted else None
    return eventually(look, timeout=timeout, interval=0.3, message=f"the watchdog finding {wanted}")


def stalled_events(services, group_id: str) -> list:
    return [event for event in services.bus.published
            if event.exchange == "task-group-stalled" and event.body["taskGroupId"] == group_id]


def create(services, task_queue_id: str, group_id: str, **overrides) -> str:
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=group_id, **overrides))
    return task_id


def claim(services, task_queue_id: str, worker: str = "w") -> dict:
    return services.work_claimer.claim_work(task_queue_id, "wg", worker, 1)["tasks"][0]


@contextmanager
def resolutions_announced(services):
    """Within the block, a resolution is announced on the 'task resolved' queue instead of
    being handled in process, as when handling it in process failed."""
    updater = services.task_calls.updater
    real, updater.after_resolution = updater.after_resolution, services.dependency_resolver.messages
    try:
        yield services.dependency_resolver.messages.resolved
    finally:
        updater.after_resolution = real


def test_a_dependent_whose_scheduling_message_was_lost_is_scheduled_and_logged_as_a_repair(
        services, task_queue_id, caplog):
    group = new_slugid()
    build = create(services, task_queue_id, group)
    test = create(services, task_queue_id, group, dependencies=[build])
    run = claim(services, task_queue_id)["runId"]
    with resolutions_announced(services) as resolved:
        services.resolutions.completed(build, run)
    lost = resolved.receive(32, timedelta(seconds=30))
    assert [message.body["taskId"] for message in lost] == [build]
    for message in lost:                                  # the message that would schedule `test`
        resolved.delete(message)
    assert services.repairs.sweep() == 0                  # a claimed run's resolution has no intent
    assert state(services, test) == "unscheduled"

    with caplog.at_level(logging.WARNING, logger="queue.watchdog"):
        view = found(services, group, "repaired")
    assert state(services, test) == "pending"
    assert view["findings"] == [{"kind": "scheduled", "count": 1, "taskIds": [test]}]
    assert any(f"repaired: task {test} of group {group}" in record.getMessage() for record in caplog.records)
    assert [event.routing_key.rsplit(".", 1)[1] for event in stalled_events(services, group)] == ["repaired"]
    assert claim(services, task_queue_id)["status"]["taskId"] == test


def test_tasks_on_a_queue_nobody_serves_are_reported_no_workers_and_never_cancelled(services, task_queue_id,
                                                                                      caplog):
    group = new_slugid()
    tasks = [create(services, task_queue_id, group) for _ in range(3)]
    services.stall_reports.set_on_stall(group, "cancel")   # even a group that asked to be cancelled
    with caplog.at_level(logging.WARNING, logger="queue.watchdog"):
        view = found(services, group, "no-workers")
    assert view["counts"] == {"unscheduled": 0, "pending": 3, "running": 0, "resolved": 0}
    [finding] = view["findings"]
    assert (finding["kind"], finding["taskQueueId"], finding["pending"]) == ("no-workers", task_queue_id, 3)
    assert "no worker pool known" in finding["detail"]
    assert {state(services, task_id) for task_id in tasks} == {"pending"}
    line = next(record.getMessage() for record in caplog.records if group in record.getMessage())
    assert "no-workers" in line and "pending 3" in line and task_queue_id in line
    time.sleep(STALL + 0.5)
    services.watchdog.sweep(now=utcnow() + timedelta(seconds=10 * STALL))   # looked at again: the same verdict
    [event] = stalled_events(services, group)                                 # announced once
    assert event.routing_key == f"primary.{group}.-.no-workers" and event.body["findings"] == [finding]


def pool(services, task_queue_id: str, max_capacity: int) -> None:
    services.worker_manager.pools.create(task_queue_id, {
        "providerId": "local", "description": "watchdog tests", "owner": "tests@example.com", "emailOnError": False,
        "config": {"maxCapacity": max_capacity}}, utcnow(), by="tests")


def test_a_queue_whose_pool_can_start_a_worker_is_served_though_no_worker_runs(services, task_queue_id):
    """A pool scaled to zero is not a queue nobody serves: the group is merely stalled."""
    pool(services, task_queue_id, 2)
    group = new_slugid()
    create(services, task_queue_id, group)
    view = found(services, group, "stalled")
    assert view["findings"] == [] and view["counts"]["pending"] == 1


def test_a_queue_whose_pool_cannot_start_a_worker_is_no_workers_and_the_finding_says_why(services, task_queue_id):
    pool(services, task_queue_id, 0)
    group = new_slugid()
    create(services, task_queue_id, group)
    [finding] = found(services, group, "no-workers")["findings"]
    assert finding["taskQueueId"] == task_queue_id
    assert finding["detail"].startswith(f"worker pool {task_queue_id} has maxCapacity 0; no worker claimed")


def test_a_queue_whose_pool_keeps_failing_to_start_workers_is_no_workers_with_the_last_error(services,
                                                                                             task_queue_id):
    pool(services, task_queue_id, 2)
    pools = services.worker_manager.pools
    pools.worker_table.save_provisioning(replace(pools.worker_table.provisioning(task_queue_id), failures=3))
    services.worker_manager.errors.record(task_queue_id, "local", "quota", "Quota reached", "no room for a worker",
                                          {}, utcnow())
    group = new_slugid()
    create(services, task_queue_id, group)
    [finding] = found(services, group, "no-workers")["findings"]
    assert finding["detail"].startswith(f"worker pool {task_queue_id} fails to start workers (3 errors in a row; "
                                        "the last: Quota reached); no worker claimed")


def test_a_run_whose_worker_stopped_without_resolving_it_is_handed_to_the_claim_resolver(azurite, task_queue_id,
                                                                                          caplog):
    services = build_services(azurite, watchdog_stall=STALL, claim_timeout=2)
    group = new_slugid()
    task_id = create(services, task_queue_id, group)
    claim(services, task_queue_id)   # and the worker is gone: no reclaim, no resolution
    with caplog.at_level(logging.WARNING, logger="queue.watchdog"):
        view = found(services, group, "repaired")         # the claim resolver's own timer never ran
    assert view["findings"] == [{"kind": "claim-expired", "count": 1, "taskIds": [task_id]}]
    runs = services.task_calls.status(task_id)["runs"]
    assert [(run["state"], run.get("reasonResolved")) for run in runs] == [("exception", "claim-expired"),
                                                                           ("pending", None)]
    assert any("handed to the claim resolver" in record.getMessage() for record in caplog.records)
    assert services.claim_resolver.sweep(now=utcnow() + timedelta(hours=1)) == 0   # its claim row went with it


def test_a_group_merely_slow_is_reported_stalled_and_cancelled_only_if_it_asked(services, task_queue_id):
    busy = create(services, task_queue_id, new_slugid())   # another group's task keeps the only worker busy
    assert claim(services, task_queue_id)["status"]["taskId"] == busy
    patient, hasty = new_slugid(), new_slugid()
    waiting = create(services, task_queue_id, patient)
    doomed = create(services, task_queue_id, hasty)
    services.stall_reports.set_on_stall(hasty, "cancel")

    view = found(services, patient, "stalled")
    assert view["findings"] == [] and view["counts"]["pending"] == 1 and view["onStall"] == "report"
    assert state(services, waiting) == "pending"
    view = found(services, hasty, "stalled")
    assert view["findings"] == [{"kind": "cancelled", "count": 1, "taskIds": [doomed]}]
    assert services.task_calls.status(doomed)["runs"][-1]["reasonResolved"] == "canceled"
    time.sleep(STALL * 2 + 0.5)
    services.watchdog.sweep()                              # resolved by the cancel: the verdict says why
    assert services.stall_reports.view(hasty)["state"] == "stalled"


def test_a_quiet_group_with_a_run_alive_is_healthy_and_a_verdict_goes_once_the_group_moves(services, task_queue_id):
    group = new_slugid()
    long_task = create(services, task_queue_id, group)
    queued = create(services, f"{task_queue_id}x", group)   # on a queue nobody serves
    assert claim(services, task_queue_id)["status"]["taskId"] == long_task
    assert found(services, group, "no-workers")["counts"]["running"] == 1
    claim(services, f"{task_queue_id}x")                   # a worker came for it
    assert found(services, group, "ok")["findings"] == []
    time.sleep(STALL + 0.5)
    for _ in range(3):                                     # both runs' claims alive: nothing to report
        services.watchdog.sweep(now=utcnow())
    assert services.stall_reports.view(group)["state"] == "ok" and state(services, queued) == "running"
    assert [event.body["state"] for event in stalled_events(services, group)] == ["no-workers"]


# -- what it costs, and its index ---------------------------------------------------------------

def watch_items(services, group_id: str) -> list[dict]:
    index = services.watchdog.index
    return [row for row in index._table.query_entities(
        "PartitionKey gt @low and PartitionKey lt @high and key eq @key",
        parameters={"low": f"{index.name}.", "high": f"{index.name}/", "key": group_id})]


def test_a_process_indexes_a_group_once_however_many_tasks_it_creates_in_it(services, task_queue_id):
    group = new_slugid()
    for _ in range(5):
        create(services, task_queue_id, group)
    assert len(watch_items(services, group)) == 1


def test_items_of_one_group_from_two_processes_become_one_and_a_resolved_group_is_dropped_then_watched_again(
        azurite, task_queue_id):
    first, second = two_processes_on(azurite, watchdog_stall=STALL)
    group = new_slugid()
    task = create(first, task_queue_id, group)
    time.sleep(0.01)
    create(second, task_queue_id, group)
    assert len(watch_items(first, group)) == 2
    eventually(lambda: first.watchdog.sweep() is not None and len(watch_items(first, group)) == 1
               and watch_items(first, group)[0]["due"] > to_iso(utcnow()), timeout=15, interval=0.3,
               message="one item left, due later")
    for claimed in (claim(first, task_queue_id), claim(first, task_queue_id)):
        first.resolutions.completed(claimed["status"]["taskId"], claimed["runId"])
    eventually(lambda: first.watchdog.sweep() is not None and not watch_items(first, group), timeout=20,
               interval=0.3, message="the resolved group dropped")
    assert first.stall_reports.view(group)["state"] == "ok"
    assert state(first, task) == "completed"
    create(first, task_queue_id, group)                    # its memory of indexing it is older than the stall
    assert len(watch_items(first, group)) == 1


def deadline_items(services, group_id: str) -> list[dict]:
    index = services.deadline_resolver.index
    return [row for row in index._table.query_entities(
        "PartitionKey gt @low and PartitionKey lt @high and key eq @key",
        parameters={"low": f"{index.name}.", "high": f"{index.name}/", "key": f"group.{group_id}"})]


def create_alone(services, task_queue_id: str, deadline_in: float) -> str:
    """A task given no taskGroupId: its group is made with it, named after it."""
    task_id = new_slugid()
    definition = make_task(task_queue_id, deadline=to_iso(utcnow() + timedelta(seconds=deadline_in)))
    services.task_calls.create(task_id, definition)
    return task_id


def test_a_task_in_a_group_of_its_own_costs_one_index_item_which_hands_its_deadline_on_once_the_group_resolved(
        services, task_queue_id):
    task = create_alone(services, task_queue_id, deadline_in=3600)
    (item,) = watch_items(services, task)
    deadline = services.task_calls.definition(task)["deadline"]
    assert item["value"] == f"lone deadline:{deadline[:19]}.000Z"
    assert deadline_items(services, task) == []              # one index write at creation, not two
    claimed = claim(services, task_queue_id)
    services.resolutions.completed(task, claimed["runId"])
    eventually(lambda: services.watchdog.sweep() is not None and not watch_items(services, task), timeout=20,
               interval=0.3, message="the resolved group dropped")
    (handed,) = deadline_items(services, task)
    assert handed["due"] == f"{deadline[:19]}.000Z"         # the deadline resolver indexes its expiry then


def test_an_unresolved_task_of_its_own_group_meets_its_deadline_handed_on_before_it_by_the_watchdog(
        services, task_queue_id):
    task = create_alone(services, task_queue_id, deadline_in=3 * STALL + 1)
    assert deadline_items(services, task) == [] and "deadline:" in watch_items(services, task)[0]["value"]
    deadline = services.task_calls.definition(task)["deadline"]
    eventually(lambda: services.watchdog.sweep() is not None and deadline_items(services, task), timeout=20,
               interval=0.3, message="the deadline handed on")
    assert to_iso(utcnow()) < deadline                       # before the deadline, not at it
    assert all("deadline:" not in item.get("value", "") for item in watch_items(services, task))
    time.sleep(max(0.0, (parse_iso(deadline) - utcnow()).total_seconds()) + 0.1)
    assert services.deadline_resolver.sweep() == 1
    run = services.task_calls.status(task)["runs"][-1]
    assert (run["state"], run["reasonResolved"]) == ("exception", "deadline-exceeded")


def test_a_task_of_its_own_group_whose_deadline_is_near_has_it_indexed_at_creation(services, task_queue_id):
    task = create_alone(services, task_queue_id, deadline_in=STALL)
    assert len(deadline_items(services, task)) == 1
    assert watch_items(services, task)[0].get("value", "") == "lone"


def test_a_deadline_whose_carrier_another_thread_wrote_first_is_indexed_at_creation(services, task_queue_id,
                                                                                    monkeypatch):
    task_id = new_slugid()
    definition = make_task(task_queue_id, deadline=to_iso(utcnow() + timedelta(hours=1)))
    watch = services.task_calls.creation.group_watch
    carried = watch.carried({task_id: {**definition, "taskGroupId": task_id}})
    assert carried                                            # as the creation will find it
    monkeypatch.setattr(watch, "carried", lambda definitions: carried)
    watch._indexed.wrote(task_id, time.monotonic())          # another thread's item, carrying its own deadline
    services.task_calls.create(task_id, definition)
    assert len(deadline_items(services, task_id)) == 1 and watch_items(services, task_id) == []


def test_a_lone_groups_look_reads_its_row_and_its_one_count_and_never_queries_every_bucket(
        services, task_queue_id, monkeypatch):
    task = create_alone(services, task_queue_id, deadline_in=3600)
    services.resolutions.completed(task, claim(services, task_queue_id)["runId"])
    monkeypatch.setattr(services.watchdog.group_table, "unresolved_totals",
                        lambda group_id: pytest.fail("a query over every bucket"))
    eventually(lambda: services.watchdog.sweep() is not None and not watch_items(services, task), timeout=20,
               interval=0.3, message="the resolved group dropped")


def test_a_group_made_lone_that_another_task_joined_is_counted_over_every_bucket(services, task_queue_id):
    task = create_alone(services, task_queue_id, deadline_in=3600)
    joiner = create(services, task_queue_id, task)          # takes lone off the group's row
    assert claim(services, task_queue_id)["status"]["taskId"] == task
    services.resolutions.completed(task, 0)
    time.sleep(STALL * 1.6)                                    # the namesake's bucket still past the drop time
    services.watchdog.sweep()
    (item,) = watch_items(services, task)
    assert item["due"] > to_iso(utcnow()) and "lone" not in item.get("value", "")   # watched on: the joiner waits
    assert state(services, joiner) == "pending"
