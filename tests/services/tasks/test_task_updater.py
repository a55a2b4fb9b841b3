"""A task's changes start from the row as this process last wrote it, when it remembers it:
one read fewer per change, and never a change decided on a stale row."""

from __future__ import annotations

from shared.domain.ids import new_slugid
from shared.services.wiring import Services
from shared.storage.client.account import OPERATIONS
from tests.conftest import _settings, make_task, unique_prefix
from tests.memory_bus import MemoryBus
from tests.memory_storage import MemoryAccount


def two_processes() -> tuple[Services, Services]:
    """Two processes of the Queue on one storage account, each with its own memory."""
    prefix = unique_prefix()
    account, settings, bus = MemoryAccount(prefix), _settings("memory", prefix, {}), MemoryBus()
    return (Services.build(settings, account=account, bus=bus),
            Services.build(settings, account=account, bus=bus))


def task_reads(services: Services, call) -> tuple[object, int, int]:
    """What `call` answers, and how many times it read a task row, in round trips overall."""
    table, reads = services.task_calls.updater.task_table, [0]
    real = table.load

    def counted(*args, **kwargs):
        reads[0] += 1
        return real(*args, **kwargs)
    table.load = counted
    before = OPERATIONS.value
    try:
        answer = call()
    finally:
        table.load = real
    return answer, reads[0], OPERATIONS.value - before


def test_a_lifecycle_in_one_process_reads_no_task_row_after_creating_it(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    answer, reads, _ = task_reads(services, lambda: services.work_claimer.claim_work(task_queue_id, "g", "w", 1))
    assert [claim["status"]["taskId"] for claim in answer["tasks"]] == [task_id] and reads == 0
    assert answer["tasks"][0]["task"]["taskQueueId"] == task_queue_id     # the definition was remembered too
    status, reads, _ = task_reads(services, lambda: services.resolutions.completed(task_id, 0))
    assert status["status"]["state"] == "completed" and reads == 0
    assert services.task_calls.status(task_id)["state"] == "completed"


def test_a_task_another_process_changed_is_claimed_from_its_current_row(task_queue_id):
    """Process A remembers the task with run 0 pending. Process B claims run 0 and reports
    worker-shutdown: run 1 is pending (a retry). A's remembered row knows no run 1, so its
    claim of run 1's hint must be decided on the row read afresh, not dropped as stale."""
    first, second = two_processes()
    task_id = new_slugid()
    first.task_calls.create(task_id, make_task(task_queue_id, retries=1))
    assert [claim["runId"] for claim in second.work_claimer.claim_work(task_queue_id, "g", "b", 1)["tasks"]] == [0]
    second.resolutions.exception(task_id, 0, "worker-shutdown")
    second.work_claimer.pending_table.flush_removals()   # B's claimed hint deleted (it may wait half a second)
    answer, reads, _ = task_reads(first, lambda: first.work_claimer.claim_work(task_queue_id, "g", "a", 1))
    assert [(claim["status"]["taskId"], claim["runId"]) for claim in answer["tasks"]] == [(task_id, 1)]
    assert reads == 1


def test_a_stale_row_costs_one_refused_write_and_loses_nothing(task_queue_id):
    first, second = two_processes()
    task_id = new_slugid()
    first.task_calls.create(task_id, make_task(task_queue_id))
    claim = second.work_claimer.claim_work(task_queue_id, "g", "b", 1)["tasks"][0]
    # A remembers the task as pending; B's claim changed it. A's cancel must see the claim.
    status, reads, _ = task_reads(first, lambda: first.task_calls.cancel(task_id))
    assert reads == 1
    run = status["runs"][0]
    assert (run["state"], run["reasonResolved"], run["workerId"]) == ("exception", "canceled", "b")
    assert claim["runId"] == 0 and second.task_calls.status(task_id)["state"] == "exception"


def test_a_fan_out_writes_its_childrens_hints_together_and_decides_a_changed_child_afresh(task_queue_id):
    """The root's resolution schedules its 40 children with their hints written in one call
    per page (16 on the root's row, 24 in the table); a child another process canceled
    meanwhile is refused its write from the remembered row, and stays canceled."""
    from tests.services.dependencies.test_dependency_tracker import deliver_events, run
    here, there = two_processes()
    root, children = new_slugid(), [new_slugid() for _ in range(40)]
    here.task_calls.create(root, make_task(task_queue_id))
    for child in children:
        here.task_calls.create(child, make_task(task_queue_id, dependencies=[root]))
    there.task_calls.cancel(children[0])
    hint_writes, add_many = [], here.task_calls.updater.pending_table.add_many
    here.task_calls.updater.pending_table.add_many = lambda hints: hint_writes.append(len(hints)) or add_many(hints)
    assert run(here, task_queue_id) == [root]
    deliver_events(here)
    states = [here.task_calls.status(child)["state"] for child in children]
    assert states == ["exception"] + ["pending"] * 39
    # The canceled child's hint too, planned from the remembered row; its write was refused,
    # and the hint is only a pointer (a claimer finds the run is not pending and drops it).
    assert sorted(hint_writes) == [16, 24]
    assert len(run(here, task_queue_id)) == 32
