"""The outbox and its publishing, through the services on the in-memory account and bus:
what each change announces, in what order, and that no event is lost when the bus is down
or the process dies between the write and the publish (the recoveries of
`shared/services/event_publisher.py`, each exercised here)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, utcnow
from shared.storage.patterns import countdown
from shared.storage.outbox import publication_marks
from tests.conftest import make_task, meanwhile, memory_services, unique_prefix
from tests.memory_bus import MemoryBus
from tests.memory_storage import MemoryAccount
from tests.services.dependencies.test_dependency_tracker import deliver_events


class Died(BaseException):
    """The process died right after the write (not an Exception: nothing may carry on)."""


class DyingBus(MemoryBus):
    """Kills the 'process' at its next publish, once."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def publish(self, events) -> None:
        if self.armed:
            self.armed = False
            raise Died()
        super().publish(events)


@pytest.fixture
def bus() -> DyingBus:
    return DyingBus()


@pytest.fixture
def services(bus):
    built = memory_services(bus=bus)
    built.event_publisher.marks.grace = timedelta(0)   # a left-over event is stale at once here
    return built


def unpublished(services, task_id: str) -> list[str]:
    """The events the task's row holds that are not known to be out."""
    return [event.exchange for event in services.event_publisher.marks.unknown(services.task_calls.task_table.load_outbox(task_id)[0])]


def claim(services, queue_id: str) -> dict:
    return services.work_claimer.claim_work(queue_id, "wg", "w1", 1)["tasks"][0]


def test_a_lifecycle_is_announced_in_order_and_leaves_nothing_unpublished(services, bus, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    claim(services, task_queue_id)
    services.resolutions.completed(task_id, 0)
    assert bus.of(task_id) == ["task-defined", "task-pending", "task-running", "task-completed"]
    assert unpublished(services, task_id) == []


def test_the_dependency_is_announced_resolved_before_its_dependent_pending_and_the_group_once(
        services, bus, task_queue_id):
    group, parent, child = new_slugid(), new_slugid(), new_slugid()
    services.task_calls.create(parent, make_task(task_queue_id, taskGroupId=group))
    services.task_calls.create(child, make_task(task_queue_id, taskGroupId=group, dependencies=[parent]))
    claim(services, task_queue_id)
    services.resolutions.completed(parent, 0)
    # The group learns of a resolution after the call answers (and, when the resolution
    # empties a bucket, asks about the others a moment later: see the test below).
    assert services.dependency_resolver.settled()
    claim(services, task_queue_id)
    services.resolutions.completed(child, 0)
    assert services.dependency_resolver.settled()
    order = [(event.exchange, event.body.get("status", {}).get("taskId")) for event in bus.published]
    assert order.index(("task-completed", parent)) < order.index(("task-pending", child))
    assert [event.exchange for event in bus.published if event.exchange.startswith("task-group")] == \
        ["task-group-resolved"]
    services.task_groups.seal(group, "2030-01-01T00:00:00.000Z")
    services.task_groups.seal(group, "2030-01-02T00:00:00.000Z")   # sealed once
    assert [event.body["taskGroupId"] for event in bus.published if event.exchange == "task-group-sealed"] == [group]


def test_a_group_refilled_right_after_its_last_member_resolved_is_not_announced_resolved_then(
        services, bus, task_queue_id, monkeypatch):
    # A client filling a group one task after another: the group is empty for a moment
    # between a completion and the next creation, and is asked about after that moment.
    monkeypatch.setattr(countdown, "EMPTIED_PAUSE", 0.5)
    group, first, second = new_slugid(), new_slugid(), new_slugid()
    while second[0] == first[0]:   # in another bucket: the first's bucket empties
        second = new_slugid()
    services.task_calls.create(first, make_task(task_queue_id, taskGroupId=group))
    claim(services, task_queue_id)
    services.resolutions.completed(first, 0)
    time.sleep(0.1)   # the group's bucket was emptied; the other buckets are asked about later
    services.task_calls.create(second, make_task(task_queue_id, taskGroupId=group))
    assert services.dependency_resolver.settled()
    assert [event for event in bus.published if event.exchange == "task-group-resolved"] == []
    claim(services, task_queue_id)
    services.resolutions.completed(second, 0)
    assert services.dependency_resolver.settled()
    assert [event.body["taskGroupId"] for event in bus.published if event.exchange == "task-group-resolved"] == \
        [group]


def test_a_bus_that_is_down_delays_events_and_loses_none(services, bus, task_queue_id):
    bus.down = True
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))        # the API keeps working
    claim(services, task_queue_id)
    assert bus.published == []
    assert unpublished(services, task_id) == ["task-defined", "task-pending", "task-running"]
    bus.down = False
    assert services.event_publisher.retry_refused() == 1
    assert bus.of(task_id) == ["task-defined", "task-pending", "task-running"]
    assert unpublished(services, task_id) == []


def test_a_retried_create_publishes_what_its_dead_first_attempt_left(services, bus, task_queue_id):
    task_id, definition = new_slugid(), make_task(task_queue_id)
    bus.armed = True
    with pytest.raises(Died):
        services.task_calls.create(task_id, definition)
    assert bus.published == [] and unpublished(services, task_id) == ["task-defined", "task-pending"]
    services.task_calls.create(task_id, definition)
    assert bus.of(task_id) == ["task-defined", "task-pending"]


def test_the_next_change_publishes_what_a_dead_writer_left_first(services, bus, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    bus.armed = True
    with pytest.raises(Died):
        claim(services, task_queue_id)
    assert unpublished(services, task_id) == ["task-running"]
    services.resolutions.completed(task_id, 0)
    assert bus.of(task_id) == ["task-defined", "task-pending", "task-running", "task-completed"]


def test_a_claimed_resolution_keeps_its_claim_row_until_its_events_are_out(services, bus, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    taken_until = parse_iso(claim(services, task_queue_id)["takenUntil"])
    bus.armed = True
    with pytest.raises(Died):   # after the write: neither the events nor the follow-up happened
        services.resolutions.completed(task_id, 0)
    assert unpublished(services, task_id) == ["task-completed"]
    services.claim_resolver.sweep(taken_until + timedelta(seconds=1))   # announces it again
    assert deliver_events(services) == 1
    assert bus.of(task_id)[-1] == "task-completed"
    assert unpublished(services, task_id) == [] and services.work_claimer.claim_table.count(task_queue_id) == 0


def test_an_unclaimed_resolution_is_published_by_its_repair(services, bus, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    bus.armed = True
    with pytest.raises(Died):
        services.task_calls.cancel(task_id)
    assert unpublished(services, task_id) == ["task-exception"]
    time.sleep(1.1)   # the repair intent comes due (repair_delay is 1 s here)
    services.repairs.sweep()
    assert bus.of(task_id)[-1] == "task-exception" and unpublished(services, task_id) == []


def test_a_young_left_over_event_is_left_to_its_writer(bus, task_queue_id):
    services = memory_services(bus=bus)   # the default grace: a writer may still be publishing
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    bus.armed = True
    with pytest.raises(Died):
        claim(services, task_queue_id)
    services.task_calls.status(task_id)
    assert not services.event_publisher.settle(services.task_calls.task_table, task_id)
    assert unpublished(services, task_id) == ["task-running"]
    assert utcnow() - parse_iso(services.task_calls.task_table.load_outbox(task_id)[0][0].at) < services.event_publisher.marks.grace


def two_processes(bus):
    """Two hosts on one storage account and bus; their left-over events are overdue at once."""
    account = MemoryAccount(unique_prefix())
    processes = memory_services(bus=bus, account=account), memory_services(bus=bus, account=account)
    for process in processes:
        process.event_publisher.marks.grace = timedelta(0)
    return processes


def published_about(bus, task_id: str) -> list[str]:
    """Every publish about `task_id`, repeats included."""
    return [event.exchange for event in bus.published if event.body.get("status", {}).get("taskId") == task_id]


def test_another_process_drops_what_the_writer_published_without_publishing_it_again(bus, task_queue_id):
    first, second = two_processes(bus)
    task_id = new_slugid()
    first.task_calls.create(task_id, make_task(task_queue_id))
    first.event_publisher.marks.flush()   # as its upkeep thread does every half second
    claim(second, task_queue_id)
    second.resolutions.completed(task_id, 0)
    assert published_about(bus, task_id) == ["task-defined", "task-pending", "task-running", "task-completed"]
    held = second.task_calls.task_table.load_outbox(task_id)[0]
    assert [event.exchange for event in held] == ["task-completed"]   # the published ones left with the writes
    second.event_publisher.marks.flush()
    assert first.event_publisher.marks.unknown(held) == []


def test_another_process_publishes_what_a_writer_that_died_left(bus, task_queue_id):
    first, second = two_processes(bus)
    task_id = new_slugid()
    bus.armed = True
    with pytest.raises(Died):
        first.task_calls.create(task_id, make_task(task_queue_id))
    claim(second, task_queue_id)
    assert published_about(bus, task_id) == ["task-defined", "task-pending", "task-running"]
    assert unpublished(second, task_id) == []


def test_a_write_whose_outcome_was_unknown_is_looked_at_and_its_events_published(services, bus, task_queue_id,
                                                                                monkeypatch):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    table = services.task_calls.task_table.table_of(task_id)
    write = table.update_entity

    def landed_but_failed(*args, **kwargs):
        write(*args, **kwargs)
        raise RuntimeError("the connection broke after the write")
    monkeypatch.setattr(table, "update_entity", landed_but_failed)
    with pytest.raises(RuntimeError):
        claim(services, task_queue_id)
    monkeypatch.undo()
    assert bus.of(task_id) == ["task-defined", "task-pending"]
    assert services.event_publisher.retry_refused() == 0   # too recent to tell: its writer may still publish it
    monkeypatch.setattr(publication_marks, "UNSURE_AFTER", 0)
    assert services.event_publisher.retry_refused() == 1
    assert bus.of(task_id) == ["task-defined", "task-pending", "task-running"]
    assert services.event_publisher.marks.unsure() == {} and unpublished(services, task_id) == []


def test_a_task_claimed_before_its_fan_outs_events_are_out_is_announced_in_order_and_its_claim_row_goes(
        bus, task_queue_id, monkeypatch):
    """A fan-out's children are claimable once their status transaction lands, a moment before
    the thread that wrote it publishes their pending events. A child claimed and completed in
    that moment: the claim publishes the pending event with its own (it is this process's and
    not out yet), so the resolution finds every event out and its claim row goes at once,
    instead of being announced again by the claim sweep a minute later."""
    services = memory_services(bus=bus)   # the default grace: the fan-out's thread is publishing
    root, children, quick = new_slugid(), [new_slugid(), new_slugid()], task_queue_id + "-children"
    services.task_calls.create(root, make_task(task_queue_id))
    for child in children:
        services.task_calls.create(child, make_task(quick, dependencies=[root]))
    real = services.event_publisher.written_together

    def claimed_first(table, written):
        def claim_and_complete():
            for task in services.work_claimer.claim_work(quick, "wg", "w2", 2)["tasks"]:
                services.resolutions.completed(task["status"]["taskId"], task["runId"])
        meanwhile(claim_and_complete)
        real(table, written)
    monkeypatch.setattr(services.event_publisher, "written_together", claimed_first)
    claim(services, task_queue_id)
    services.resolutions.completed(root, 0)
    for child in children:
        assert bus.of(child) == ["task-defined", "task-pending", "task-running", "task-completed"]
    assert services.work_claimer.claim_table.count(quick) == 0
