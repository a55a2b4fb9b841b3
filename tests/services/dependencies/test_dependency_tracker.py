"""Dependencies through the services, with the real event queue drained as the host would."""

import time
from datetime import timedelta

import pytest

from shared.domain import task_definition
from shared.domain.errors import Conflict, InvalidInput
from shared.domain.ids import new_slugid
from shared.services.dependencies.resolution_messages import Resolution
from shared.domain.timestamps import to_iso, utcnow
from shared.services.dependencies import dependency_tracker
from shared.services.wiring import Services
from tests.conftest import follow_ups_lost, make_task, meanwhile, two_processes


def deliver_events(services: Services) -> int:
    """Hand every queued 'task resolved' event to the handler, like the queue trigger does,
    once the resolutions this process finishes after answering are finished."""
    assert services.dependency_resolver.settled()
    events = services.task_calls.updater.messages.resolved
    delivered = 0
    while messages := events.receive(32, timedelta(seconds=30)):
        for message in messages:
            services.dependency_resolver.handle_message(message.body)
            events.delete(message)
            delivered += 1
    return delivered


def run(services: Services, task_queue_id: str, outcome: str = "completed") -> list[str]:
    """Claim everything pending on the queue and resolve it; returns the task ids."""
    claims = services.work_claimer.claim_work(task_queue_id, "wg", "w", 32)["tasks"]
    for claim in claims:
        task_id = claim["status"]["taskId"]
        getattr(services.resolutions, outcome)(task_id, claim["runId"])
    deliver_events(services)
    return [claim["status"]["taskId"] for claim in claims]


def state(services: Services, task_id: str) -> str:
    return services.task_calls.status(task_id)["state"]


def create(services: Services, task_queue_id: str, **overrides) -> str:
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, **overrides))
    return task_id


def test_a_chain_runs_in_order(services, task_queue_id):
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first])
    third = create(services, task_queue_id, dependencies=[second])
    assert [state(services, task) for task in (first, second, third)] == ["pending", "unscheduled", "unscheduled"]
    assert run(services, task_queue_id) == [first]
    assert run(services, task_queue_id) == [second]
    assert run(services, task_queue_id) == [third]
    assert run(services, task_queue_id) == []


def table_rows(services: Services, required: str) -> list[str]:
    """The dependents of `required` that the TaskDependencies table holds."""
    return [dependent.task_id for dependent in services.dependency_tracker.dependency_table.dependents(required, "", 1000)]


def test_a_tasks_row_lists_its_dependents_and_its_resolution_asks_no_table(services, task_queue_id, monkeypatch):
    """A dependent created after its dependency is listed on the dependency's row (a
    conditional write before the dependent exists); the resolution finds it there."""
    looked_up = []
    table = services.dependency_resolver.dependency_tracker.dependency_table
    real = table.dependents
    monkeypatch.setattr(table, "dependents", lambda task_id, *rest: looked_up.append(task_id) or real(task_id, *rest))
    alone, first = create(services, task_queue_id), create(services, task_queue_id)
    rows = services.task_calls.task_table
    assert [(rows.load(task_id).dependents, rows.load(task_id).more_dependents) for task_id in (alone, first)] \
        == [((), False), ((), False)]
    second = create(services, task_queue_id, dependencies=[first])   # waits on a task created before it
    assert [dependent.task_id for dependent in rows.load(first).dependents] == [second]
    assert not rows.load(first).more_dependents and rows.load(second).dependents == ()
    assert table_rows(services, first) == []
    looked_up.clear()
    assert sorted(run(services, task_queue_id)) == sorted([alone, first])
    assert run(services, task_queue_id) == [second]
    assert looked_up == []


def test_dependents_beyond_what_a_row_lists_are_in_the_table_and_all_run(services, task_queue_id):
    from shared.domain.dependencies import LISTED_DEPENDENTS

    root = create(services, task_queue_id)
    children = [create(services, task_queue_id, dependencies=[root]) for _ in range(LISTED_DEPENDENTS + 4)]
    record = services.task_calls.task_table.load(root)
    assert [dependent.task_id for dependent in record.dependents] == children[:LISTED_DEPENDENTS]
    assert record.more_dependents and table_rows(services, root) == sorted(children[LISTED_DEPENDENTS:])
    listed = services.task_calls.dependents(root, "", 1000)[0]["tasks"]
    assert [entry["status"]["taskId"] for entry in listed] == sorted(children)
    assert run(services, task_queue_id) == [root]
    assert sorted(run(services, task_queue_id)) == sorted(children)


def test_dependents_created_at_once_are_each_listed_or_in_the_table(services, task_queue_id):
    """Creators racing to list their tasks on one row: each write is conditional, so none is
    lost, and the row never lists more than it may."""
    from concurrent.futures import ThreadPoolExecutor
    from shared.domain.dependencies import LISTED_DEPENDENTS

    root = create(services, task_queue_id)
    with ThreadPoolExecutor(8) as pool:
        children = list(pool.map(lambda _: create(services, task_queue_id, dependencies=[root]), range(40)))
    record = services.task_calls.task_table.load(root)
    listed = {dependent.task_id for dependent in record.dependents}
    assert len(listed) == LISTED_DEPENDENTS and record.more_dependents
    assert listed | set(table_rows(services, root)) == set(children)
    assert run(services, task_queue_id) == [root]
    ran = []
    while batch := run(services, task_queue_id):   # 32 at most at a time
        ran += batch
    assert sorted(ran) == sorted(children)


def test_a_dependency_resolving_before_its_dependent_is_listed_still_schedules_it(services, task_queue_id,
                                                                                monkeypatch):
    """The dependency resolves between the creator's read of it and the listing: its
    resolution found no dependent, the listing's conditional write is refused and done
    again, and the creator's re-check after inserting the dependent schedules it."""
    first = create(services, task_queue_id)
    tasks, real = services.task_calls.task_table, services.task_calls.task_table.save_dependents
    raced = []

    def save(record):
        if not raced:
            raced.extend(meanwhile(lambda: run(services, task_queue_id)))   # the quickest worker, between the read and the listing
        return real(record)
    monkeypatch.setattr(tasks, "save_dependents", save)
    second = create(services, task_queue_id, dependencies=[first])
    assert raced == [first]
    assert state(services, second) == "pending"
    assert [dependent.task_id for dependent in tasks.load(first).dependents] == [second]


def test_a_diamond_waits_for_both_sides(services, task_queue_id):
    top = create(services, task_queue_id)
    left = create(services, task_queue_id, dependencies=[top])
    right = create(services, task_queue_id, dependencies=[top])
    bottom = create(services, task_queue_id, dependencies=[left, right])
    run(services, task_queue_id)
    assert sorted(run(services, task_queue_id)) == sorted([left, right])
    assert run(services, task_queue_id) == [bottom]


def test_created_after_its_dependency_resolved_is_scheduled_at_once(services, task_queue_id):
    done = create(services, task_queue_id)
    run(services, task_queue_id)
    assert state(services, create(services, task_queue_id, dependencies=[done])) == "pending"


def test_all_completed_waits_through_a_failure_until_a_rerun_completes(services, task_queue_id):
    flaky = create(services, task_queue_id, retries=0)
    dependent = create(services, task_queue_id, dependencies=[flaky])
    run(services, task_queue_id, "failed")
    assert state(services, dependent) == "unscheduled"
    services.task_calls.rerun(flaky)
    run(services, task_queue_id)
    assert state(services, dependent) == "pending"


def test_all_resolved_runs_after_a_failure(services, task_queue_id):
    failing = create(services, task_queue_id)
    dependent = create(services, task_queue_id, dependencies=[failing], requires="all-resolved")
    run(services, task_queue_id, "failed")
    assert state(services, dependent) == "pending"


def test_unknown_and_expiring_dependencies_are_refused_and_nothing_is_stored(services, task_queue_id):
    missing = new_slugid()
    task_id = new_slugid()
    with pytest.raises(InvalidInput, match=missing):
        services.task_calls.create(task_id, make_task(task_queue_id, dependencies=[missing]))
    soon = utcnow() + timedelta(hours=1)
    short_lived = create(services, task_queue_id, deadline=to_iso(soon), expires=to_iso(soon))
    with pytest.raises(InvalidInput, match=short_lived):
        services.task_calls.create(task_id, make_task(task_queue_id, dependencies=[short_lived],
                                                 deadline=to_iso(soon + timedelta(minutes=30))))
    with pytest.raises(Exception):
        services.task_calls.status(task_id)


def test_a_duplicated_event_changes_nothing(services, task_queue_id):
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first])
    run(services, task_queue_id)
    before = services.task_calls.status(second)
    assert services.dependency_resolver.handle(first, 0) is True    # handled again, from the task row
    services.task_calls.updater.messages.announce(Resolution.of(services.task_calls.task_table.load(first), 0))
    assert deliver_events(services) == 1
    assert services.task_calls.status(second) == before


def test_a_claimed_run_whose_resolution_was_lost_is_repaired_by_the_claim_expiry_sweep(services, task_queue_id):
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first])
    claim = services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]
    with follow_ups_lost(services):
        services.resolutions.completed(first, claim["runId"])
    assert state(services, second) == "unscheduled"
    # Once the claim row is due, the sweep finds the run resolved and announces it again.
    assert services.claim_resolver.sweep(now=utcnow() + timedelta(hours=1)) == 0
    assert deliver_events(services) == 1
    assert state(services, second) == "pending"


def test_an_unclaimed_resolution_that_was_lost_is_repaired_by_the_repair_sweep(services, task_queue_id):
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first], requires="all-resolved")
    with follow_ups_lost(services):
        services.task_calls.cancel(first)
    assert state(services, second) == "unscheduled"
    import time
    time.sleep(1.5)  # the repair intent comes due (repair_delay=1 in this fixture)
    assert services.repairs.sweep() >= 1
    assert state(services, second) == "pending"


def test_an_unclaimed_resolution_followed_up_here_withdraws_its_repair_intent(services, task_queue_id):
    """A cancel (or a deadline) resolves a run nobody claimed: the intent sent before its
    write stands for the follow-up only until it is done, so the repair sweep a minute later
    neither does it again nor logs it as repaired."""
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first], requires="all-resolved")
    services.task_calls.cancel(first)
    assert services.dependency_resolver.settled()
    assert state(services, second) == "pending"
    import time
    time.sleep(1.5)  # an intent left would be due now (repair_delay=1 in this fixture)
    assert services.repairs.intents.receive(32, timedelta(seconds=1)) == []


def test_dependents_are_listed_in_pages(services, task_queue_id):
    required = create(services, task_queue_id)
    dependents = {create(services, task_queue_id, dependencies=[required]) for _ in range(5)}
    seen, after = [], ""
    while after is not None:
        page, after = services.task_calls.dependents(required, after, 2)
        seen += [entry["status"]["taskId"] for entry in page["tasks"]]
    assert set(seen) == dependents and len(seen) == 5


def test_fan_out_and_fan_in(services, task_queue_id):
    root = create(services, task_queue_id)
    middle = [create(services, task_queue_id, dependencies=[root]) for _ in range(40)]
    sink = create(services, task_queue_id, dependencies=middle)
    run(services, task_queue_id)
    ran = []
    while batch := run(services, task_queue_id):
        ran += batch
    assert set(ran) == set(middle) | {sink} and ran[-1] == sink


def test_r2_a_second_creators_requirement_written_after_the_resolution_does_not_block_the_dependent(services, task_queue_id):
    """R2: two creators of one batch (a request sent again while the first still ran). The
    second checked before the tasks existed; its requirement rows land after the first
    dependency's resolution deleted them: the last resolution still schedules the dependent."""
    from shared.domain import task_definition

    first, second, task_id, now = new_slugid(), new_slugid(), new_slugid(), utcnow()
    bodies = {first: make_task(task_queue_id), second: make_task(task_queue_id),
              task_id: make_task(task_queue_id, dependencies=[first, second])}
    batch = {key: task_definition.normalize(key, body, now) for key, body in bodies.items()}
    creation = services.task_calls.creation
    late = creation.prepare(batch)     # the second creator checked before ...
    creation.create(batch, now)        # ... the first one created the tasks
    runs = {claim["status"]["taskId"]: claim["runId"]
            for claim in services.work_claimer.claim_work(task_queue_id, "wg", "w", 2)["tasks"]}
    services.resolutions.completed(first, runs[first])
    deliver_events(services)
    assert services.dependency_tracker.requirement_table.remaining(task_id, 5) == [second]
    creation.carry_out(late, now)      # would write the requirement on `first` again: it is written once
    assert services.dependency_tracker.requirement_table.remaining(task_id, 5) == [second]
    services.resolutions.completed(second, runs[second])
    deliver_events(services)
    assert state(services, task_id) == "pending"


def test_r2_a_requirement_written_again_after_it_was_satisfied_does_not_block_the_dependent(
        services, task_queue_id, monkeypatch):
    """R2, with the second creator dying right after writing its rows (it never finds the
    task written, and never re-checks): the row it wrote again must not block the task."""
    first, second = create(services, task_queue_id), create(services, task_queue_id)
    child = create(services, task_queue_id, dependencies=[first, second])
    requirements = services.dependency_tracker.requirement_table
    real = requirements.satisfy

    def satisfy_then_rewritten(task_id, required_id):
        monkeypatch.setattr(requirements, "satisfy", real)   # the other creator writes once
        left = real(task_id, required_id)
        requirements.add([(task_id, required_id)])
        return left
    monkeypatch.setattr(requirements, "satisfy", satisfy_then_rewritten)
    assert sorted(run(services, task_queue_id)) == sorted([first, second])
    assert state(services, child) == "pending"


def test_r7_a_fan_out_handler_that_dies_midway_resumes_where_it_stopped(services, task_queue_id, monkeypatch):
    """R7: a fan-out longer than one invocation. The handler dies after its second page; the
    redelivered event starts after the last page done, not from the first one again."""
    from shared.services.dependencies import dependency_tracker as module

    monkeypatch.setattr(module, "PAGE", 10)
    monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)   # every dependent in the table, read in pages
    root = create(services, task_queue_id)
    children = [create(services, task_queue_id, dependencies=[root]) for _ in range(35)]
    claim = services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]
    with follow_ups_lost(services):   # the fan-out is left to the handler of the redelivered event
        services.resolutions.completed(root, claim["runId"])
    edges, real, starts = services.dependency_tracker.dependency_table, services.dependency_tracker.dependency_table.dependents, []

    def dependents(required_id, after, limit):
        starts.append(after)
        if len(starts) == 3:
            raise RuntimeError("the process died here")
        return real(required_id, after, limit)
    monkeypatch.setattr(edges, "dependents", dependents)
    with pytest.raises(RuntimeError):
        services.dependency_resolver.handle(root, claim["runId"])
    first_pages = sorted(children)[:20]
    assert services.dependency_resolver.handle(root, claim["runId"])
    # The first page, read again, shows a long fan-out: its progress says where to resume.
    assert starts[3:5] == ["", first_pages[-1]]
    assert len(starts) == 6                    # the last page read, none after it
    assert {state(services, child) for child in children} == {"pending"}


def _long_fan_out(services, task_queue_id, monkeypatch, children: int = 25) -> tuple[str, list[str], dict]:
    """A root with more dependents than a page (10 here), all in the table; claimed."""
    from shared.services.dependencies import dependency_tracker as module

    monkeypatch.setattr(module, "PAGE", 10)
    monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)
    root = create(services, task_queue_id)
    dependents = [create(services, task_queue_id, dependencies=[root]) for _ in range(children)]
    return root, dependents, services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]


def test_a_long_fan_out_is_processed_by_the_process_that_resolved_its_task_after_the_call_answered(
        services, task_queue_id, monkeypatch):
    root, dependents, claim = _long_fan_out(services, task_queue_id, monkeypatch)
    services.resolutions.completed(root, claim["runId"])
    assert services.dependency_resolver.settled()
    assert {state(services, dependent) for dependent in dependents} == {"pending"}
    assert deliver_events(services) == 0                 # nothing announced: no queue poll to wait for
    services.work_claimer.claim_table.flush_removals()          # the claimed run's row goes once all is done
    assert services.work_claimer.claim_table.count(task_queue_id) == 0


def test_a_long_fan_out_beyond_the_room_for_work_after_answering_is_announced(services, task_queue_id, monkeypatch):
    from shared.services.dependencies import dependency_resolver as module

    root, dependents, claim = _long_fan_out(services, task_queue_id, monkeypatch)
    monkeypatch.setattr(module, "_after_answer", module._AfterAnswer(1))
    module._after_answer.enter()                         # the only room taken
    services.resolutions.completed(root, claim["runId"])
    assert {state(services, dependent) for dependent in dependents} == {"unscheduled"}
    module._after_answer.leave_after(lambda: None)
    assert deliver_events(services) == 1                 # the queue-triggered handler did the fan-out
    assert {state(services, dependent) for dependent in dependents} == {"pending"}


def test_a_task_naming_thousands_of_unknown_dependencies_is_refused_after_reading_a_few(services, task_queue_id):
    from shared.storage.client.account import OPERATIONS

    known = create(services, task_queue_id)
    unknown = [new_slugid() for _ in range(10_000)]
    before = OPERATIONS.value
    with pytest.raises(InvalidInput, match="do not exist") as refused:
        services.task_calls.create(new_slugid(), make_task(task_queue_id, dependencies=[known, *unknown]))
    assert OPERATIONS.value - before < 100
    assert "stopped after reading" in refused.value.message


def test_a_fan_out_whose_dependents_still_wait_on_others_is_handled_without_deadlock(services, task_queue_id):
    """Each dependent of the resolved task still waits on another one, which its re-check
    reads: more dependents than the tracker has threads must not starve those reads."""
    import threading

    root, other = create(services, task_queue_id), create(services, task_queue_id)
    children = [create(services, task_queue_id, dependencies=[root, other]) for _ in range(40)]
    claim = services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]
    completed = claim["status"]["taskId"]
    services.resolutions.completed(completed, claim["runId"])
    handler = threading.Thread(target=services.dependency_resolver.handle, args=(completed, claim["runId"]),
                               daemon=True)
    handler.start()
    handler.join(timeout=60)
    assert not handler.is_alive(), "the resolution handler is stuck"
    assert {state(services, child) for child in children} == {"unscheduled"}


def _intents(services: Services, kind: str) -> list[dict]:
    """The repair intents of `kind` due by now (their delay is a second here)."""
    time.sleep(1.2)
    received = services.repairs.intents.receive(32, timedelta(seconds=1))
    return [message.body for message in received if message.body and message.body["kind"] == kind]


def test_a_creator_that_rechecked_its_task_withdraws_the_intent_standing_for_the_recheck(services, task_queue_id):
    required = create(services, task_queue_id)
    create(services, task_queue_id, dependencies=[required])
    assert _intents(services, "check-ready") == []


def _resolve_before_requirements_are_written(services: Services, task_queue_id: str, monkeypatch) -> None:
    """The pending task completes (its handler runs) as the creator is about to write its
    task's requirement rows, before it lists the task on its dependencies."""
    _resolve_before(services.dependency_tracker.requirement_table, "add", services, task_queue_id, monkeypatch)


def _resolve_once_listed(services: Services, task_queue_id: str, monkeypatch) -> None:
    """The pending task completes (its handler runs) once the creator has listed its task on
    its dependencies, before it writes their TaskDependencies rows and the task's row."""
    for name in ("add", "add_absent"):
        _resolve_before(services.dependency_tracker.dependency_table, name, services, task_queue_id, monkeypatch)


def _resolve_before(holder, name: str, services: Services, task_queue_id: str, monkeypatch) -> None:
    real = getattr(holder, name)

    def resolve_first(*args):
        meanwhile(lambda: run(services, task_queue_id))
        return real(*args)
    monkeypatch.setattr(holder, name, resolve_first)


def _creator_dies_before_its_recheck(services: Services, monkeypatch) -> None:
    def die(*args, **kwargs):
        raise RuntimeError("the creator died")
    monkeypatch.setattr(services.dependency_tracker, "recheck", die)


def test_a_task_whose_one_dependency_resolves_while_it_is_listed_is_created_scheduled(
        services, task_queue_id, monkeypatch):
    """Read unresolved by the check, resolved by the time the creator has listed the task on
    it: the creator reads it again before the row, so the task is created pending. The
    resolution's handler, which found the task listed with no row yet, left an intent to
    check it: it finds nothing to do."""
    required = create(services, task_queue_id)
    _resolve_once_listed(services, task_queue_id, monkeypatch)   # `required` completes
    dependent = new_slugid()
    status = services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[required]))
    assert status["state"] == "pending"
    assert _intents(services, "check-ready") == [{"kind": "check-ready", "taskId": dependent}]
    time.sleep(1.1)                                   # the intent's hold in `_intents`
    assert services.repairs.sweep() == 0
    assert state(services, dependent) == "pending"


def test_a_resolution_that_finds_its_dependent_listed_but_not_written_leaves_an_intent_that_schedules_it(
        services, task_queue_id, monkeypatch):
    """The dependency resolves after the creator read it again and before the task's row: its
    handler finds the task listed with no row, and sends the intent. The creator dies before
    the re-check it makes after the row, so only that intent schedules the task."""
    from shared.services.dependencies import dependency_tracker as module
    monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)   # listed in the table: read again before the row
    required = create(services, task_queue_id)
    dependencies = services.dependency_tracker
    real_ready = dependencies._ready

    def resolve_after(definition):
        ready = real_ready(definition)
        meanwhile(lambda: run(services, task_queue_id))   # `required` completes, its handler runs
        return ready
    monkeypatch.setattr(dependencies, "_ready", resolve_after)
    _creator_dies_before_its_recheck(services, monkeypatch)
    dependent = new_slugid()
    with pytest.raises(RuntimeError):
        services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[required]))
    monkeypatch.undo()
    assert (state(services, required), state(services, dependent)) == ("completed", "unscheduled")
    assert _intents(services, "check-ready") == [{"kind": "check-ready", "taskId": dependent}]
    time.sleep(1.1)                                   # the intent's hold in `_intents`
    services.repairs.sweep()
    assert state(services, dependent) == "pending"


def test_a_task_listed_on_its_one_dependencys_row_as_it_resolves_is_created_scheduled(
        services, task_queue_id, monkeypatch):
    """Listed on the dependency's row by a write conditional on the row as checked, the task
    needs no second read of it: a resolution before the write makes the write read the row
    again, and the task is created pending; one after finds the task listed."""
    required = create(services, task_queue_id)
    table = services.dependency_tracker.task_table
    real_save, reads = table.save_dependents, []

    def resolve_first(row):
        if not reads:
            reads.append(row)
            meanwhile(lambda: run(services, task_queue_id))   # `required` completes before the listing
        return real_save(row)
    monkeypatch.setattr(table, "save_dependents", resolve_first)
    rechecked, real_recheck = [], services.dependency_tracker.recheck
    monkeypatch.setattr(services.dependency_tracker, "recheck",
                        lambda *args: rechecked.append(args[0]) or real_recheck(*args))
    dependent = new_slugid()
    assert services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[required]))["state"] == "pending"
    assert rechecked == []   # found resolved by the listing's write, not by the re-check after the row
    assert [d.task_id for d in table.load(required).dependents] == [dependent]


def test_a_creator_of_a_task_waiting_on_several_that_dies_before_its_recheck_leaves_the_intent_that_schedules_it(
        services, task_queue_id, monkeypatch):
    """One dependency resolves after the creator read it unresolved and before the task's
    requirement rows exist: its handler finds no requirement and no row. The creator dies
    before its own re-check; the intent it sent before writing anything schedules the task."""
    other = create(services, task_queue_id)
    run(services, task_queue_id)                      # `other` completed
    required = create(services, task_queue_id)
    _resolve_before_requirements_are_written(services, task_queue_id, monkeypatch)   # `required` completes
    _creator_dies_before_its_recheck(services, monkeypatch)
    dependent = new_slugid()
    with pytest.raises(RuntimeError):
        services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[required, other]))
    monkeypatch.undo()
    assert (state(services, required), state(services, dependent)) == ("completed", "unscheduled")
    intents = _intents(services, "check-ready")
    assert intents and set(map(str, intents)) == {str({"kind": "check-ready", "taskId": dependent})}
    time.sleep(1.1)
    services.repairs.sweep()
    assert state(services, dependent) == "pending"


def test_an_announced_resolution_carries_the_dependents_its_row_lists(services, task_queue_id):
    """A resolution handed to the queue trigger (a long fan-out, a failed follow-up) says who
    waits on the task, so the handler reads nothing back to find them."""
    first = create(services, task_queue_id)
    second = create(services, task_queue_id, dependencies=[first])
    claim = services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]
    with follow_ups_lost(services):
        services.resolutions.completed(first, claim["runId"])
    resolution = Resolution.of(services.task_calls.task_table.load(first), claim["runId"])
    assert Resolution.from_message(resolution.to_message()) == resolution
    assert [dependent.task_id for dependent in resolution.dependents] == [second]
    assert not resolution.more_dependents
    services.task_calls.updater.messages.announce(resolution)
    deliver_events(services)
    assert state(services, second) == "pending"


# A task waiting on one task is created without reading whether its taskId exists (see
# `TaskCreation.prepare`): a createTask refused for another definition has listed it on the
# task it names by then. These check that such a listing schedules nothing and shows nowhere.

@pytest.fixture(params=["listed on the row", "in the table"])
def where(request, monkeypatch) -> str:
    """Where the refused definition's listing lands: on its dependency's row, or (none
    listed there) in the TaskDependencies table."""
    if request.param == "in the table":
        from shared.services.dependencies import dependency_tracker as module
        monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)
    return request.param


def _other_definition(services: Services, task_queue_id: str, task_id: str, **overrides) -> None:
    """createTask of `task_id` (made in a group of its own id) again, with other dependencies
    or terms: refused."""
    with pytest.raises(Conflict, match="different definition"):
        services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id, **overrides))


def _dependents(services: Services, task_id: str) -> list[str]:
    return [task["status"]["taskId"] for task in services.task_calls.dependents(task_id, "", 100)[0]["tasks"]]


def test_another_definition_naming_a_task_the_task_does_not_wait_on_schedules_nothing(
        services, task_queue_id, where):
    waited_on, named = create(services, task_queue_id + "-a"), create(services, task_queue_id)
    task_id = create(services, task_queue_id + "-b", dependencies=[waited_on])
    _other_definition(services, task_queue_id, task_id, dependencies=[named])
    assert table_rows(services, named) == []            # the refused create's row was taken back
    assert run(services, task_queue_id) == [named]
    assert state(services, task_id) == "unscheduled" and _dependents(services, named) == []
    assert run(services, task_queue_id + "-a") == [waited_on]
    assert run(services, task_queue_id + "-b") == [task_id]


def test_a_refused_creator_that_dies_before_taking_its_listing_back_schedules_nothing(
        services, task_queue_id, monkeypatch):
    from shared.services.dependencies import dependency_tracker as module
    monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)
    waited_on, named = create(services, task_queue_id + "-a"), create(services, task_queue_id)
    task_id = create(services, task_queue_id + "-b", dependencies=[waited_on])
    genuine = create(services, task_queue_id + "-c", dependencies=[named])   # scheduled with the others found

    def die(*args):
        raise RuntimeError("the creator died")
    monkeypatch.setattr(services.dependency_tracker, "withdraw", die)
    with pytest.raises(RuntimeError, match="died"):
        services.task_calls.create(task_id, make_task(task_queue_id, taskGroupId=task_id, dependencies=[named]))
    assert table_rows(services, named) == sorted([task_id, genuine])      # its row left behind
    assert run(services, task_queue_id) == [named]      # its resolution finds it, and leaves it be
    assert state(services, task_id) == "unscheduled" and _dependents(services, named) == [genuine]
    assert state(services, genuine) == "pending"
    assert run(services, task_queue_id + "-a") == [waited_on]
    assert state(services, task_id) == "pending"


def test_another_definition_on_other_terms_leaves_the_tasks_own_listing(services, task_queue_id, where):
    """The task waits for any resolution; the refused definition, for a completion: its
    listing must not replace the task's, or the dependency's failure would leave it waiting."""
    required = create(services, task_queue_id)
    task_id = create(services, task_queue_id + "-b", dependencies=[required], requires="all-resolved")
    _other_definition(services, task_queue_id + "-b", task_id, dependencies=[required], requires="all-completed")
    assert run(services, task_queue_id, "failed") == [required]
    assert state(services, task_id) == "pending" and _dependents(services, required) == [task_id]


def test_the_same_task_waiting_on_one_task_created_again_is_the_same_answer(services, task_queue_id, where):
    required = create(services, task_queue_id)
    task_id, definition = new_slugid(), make_task(task_queue_id + "-b", dependencies=[required])
    first = services.task_calls.create(task_id, definition)
    assert services.task_calls.create(task_id, definition) == first
    assert _dependents(services, required) == [task_id]
    assert run(services, task_queue_id) == [required]
    assert run(services, task_queue_id + "-b") == [task_id]


def test_a_batch_refused_for_one_taskId_keeps_the_listing_of_a_task_it_created(services, task_queue_id, monkeypatch):
    """Tasks created together, each waiting on one task: one taskId is another group's, found
    when their rows are inserted, the other's row written. The rows listing the created task
    stay (it runs when its dependency completes); the refused one's go."""
    from shared.services.dependencies import dependency_tracker as module
    monkeypatch.setattr(module, "LISTED_DEPENDENTS", 0)
    required = create(services, task_queue_id)
    taken = create(services, task_queue_id + "-b")
    first, group = new_slugid(), new_slugid()
    now = utcnow()
    batch = {task_id: task_definition.normalize(task_id, make_task(task_queue_id + "-c", taskGroupId=group,
                                                                   dependencies=[required]), now)
             for task_id in (first, taken)}
    import shared.services.tasks.task_creation as creation_module
    monkeypatch.setattr(creation_module, "insertion_waves", lambda definitions: [[first, taken]])
    with pytest.raises(Conflict, match="different definition"):
        services.task_calls.creation.create(batch, now)
    assert table_rows(services, required) == [first]
    assert run(services, task_queue_id) == [required]
    assert run(services, task_queue_id + "-c") == [first]


def _counting_loads(services, monkeypatch) -> list[str]:
    table, loads = services.dependency_tracker.task_table, []
    real = table.load
    monkeypatch.setattr(table, "load", lambda task_id, *rest, **options:
                        loads.append(task_id) or real(task_id, *rest, **options))
    return loads


def test_a_fan_in_on_tasks_this_process_made_reads_none_of_them(services, task_queue_id, monkeypatch):
    """As its process wrote them, unresolved: the listings, conditional on those versions,
    check that they still are, and from then on each one's resolution satisfies the fan-in's
    requirement (written before the listing): the re-check after its row reads none."""
    children = [create(services, task_queue_id) for _ in range(6)]
    loads = _counting_loads(services, monkeypatch)
    fan_in = create(services, task_queue_id, dependencies=children)
    assert loads == [fan_in]   # its own: whether it exists
    assert state(services, fan_in) == "unscheduled"
    assert sorted(run(services, task_queue_id)) == sorted(children)
    assert run(services, task_queue_id) == [fan_in]


def test_a_dependency_resolved_by_another_process_since_this_one_wrote_it(task_queue_id):
    """The version remembered is stale: the listing conditional on it is refused, and the
    task is created knowing what the row says now."""
    here, there = two_processes()
    done, other = create(here, task_queue_id), create(here, task_queue_id)
    assert sorted(run(there, task_queue_id)) == sorted([done, other])
    alone = create(here, task_queue_id, dependencies=[done])
    both = create(here, task_queue_id, dependencies=[done, other])
    assert state(here, alone) == "pending" and state(here, both) == "pending"


def test_a_dependency_remembered_resolved_is_read_again(task_queue_id):
    """A resolved version is not taken as known: another process may have rerun the task."""
    here, there = two_processes()
    dependency = create(here, task_queue_id)
    run(here, task_queue_id)
    there.task_calls.rerun(dependency)
    waiting = create(here, task_queue_id, dependencies=[dependency])
    assert state(here, waiting) == "unscheduled"
    assert run(there, task_queue_id) == [dependency]
    assert state(here, waiting) == "pending"


def test_a_dependency_resolving_between_its_listing_and_its_dependents_row_is_counted_beyond_the_first_page(
        services, task_queue_id, monkeypatch):
    """The last of five (in taskId order, beyond a page of two) resolves right after it listed
    the fan-in, before the fan-in's row exists: its resolution finds the requirement row and
    deletes it. (Written after the listing, the row would have waited for ever: the re-check
    stopped at a first page with nothing resolved.) The other four then schedule the fan-in."""
    monkeypatch.setattr(dependency_tracker, "PAGE", 2)
    ids = sorted(new_slugid() for _ in range(5))
    quick_queue = task_queue_id + "-quick"
    for task_id in ids:
        services.task_calls.create(task_id, make_task(quick_queue if task_id == ids[-1] else task_queue_id))
    tasks, real = services.task_calls.task_table, services.task_calls.task_table.save_dependents
    raced = []

    def save(record):
        saved = real(record)
        if record.task_id == ids[-1]:
            raced.extend(meanwhile(lambda: run(services, quick_queue)))
        return saved
    monkeypatch.setattr(tasks, "save_dependents", save)
    fan_in = create(services, task_queue_id, dependencies=ids)
    assert raced == [ids[-1]] and state(services, fan_in) == "unscheduled"
    assert sorted(run(services, task_queue_id)) == ids[:-1]
    assert run(services, task_queue_id) == [fan_in]
