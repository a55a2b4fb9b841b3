"""Expiration: a task past `expires` is deleted with every record kept about it."""

import json
from datetime import timedelta

import pytest

from shared.domain.errors import NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.task_groups.task_groups import EXPIRY_STEP
from shared.services.tasks.run_results import results_blob
from tests.conftest import make_task
from tests.services.dependencies.test_dependency_tracker import run
from tests.services.scheduler.test_task_graphs import graph


def short_lived(seconds: int = 3) -> dict:
    """Definition fields of a task that expires `seconds` from now (its deadline too)."""
    end = to_iso(utcnow() + timedelta(seconds=seconds))
    return {"deadline": end, "expires": end}


def expire_at(services, now) -> int:
    """The deadline sweep (which indexes the expiry of tasks past their deadline), then the
    expiration sweep, at `now`; returns what the expiration sweep deleted."""
    services.deadline_resolver.sweep(now=now)
    return services.task_expiry.sweep(now=now)


def records_of(services, task_id: str, group_id: str) -> dict:
    """Every record kept about a task, read through the storage adapters."""
    edges = services.dependency_tracker.dependency_table
    return {
        "dependents": edges.dependents(task_id, "", 10),
        "requirements": services.dependency_tracker.requirement_table.remaining(task_id),
        "members": services.task_groups.group_table.members(group_id, "", 10),
        "group": services.task_groups.group_table.load(group_id),
    }


def test_expired_tasks_go_with_their_dependencies_group_and_graph(services, task_queue_id, monkeypatch):
    from shared.domain import dependencies
    monkeypatch.setattr(dependencies, "LISTED_DEPENDENTS", 0)   # rows list none: the table holds every edge
    graph_id = new_slugid()
    lifetime = short_lived()   # one for both: a dependency may not expire before its dependent's deadline
    services.task_graphs.create(graph_id, graph(task_queue_id, build={"task": lifetime},
                                                test={"requires": ["build"], "task": lifetime}))
    ids = {entry["label"]: entry["taskId"] for entry in services.task_graphs.inspect(graph_id)["tasks"]}
    run(services, task_queue_id)
    run(services, task_queue_id)
    assert services.task_graphs.status(graph_id)["status"]["state"] == "finished"
    before = records_of(services, ids["build"], graph_id)
    assert before["dependents"] and len(before["members"]) == 2 and before["group"]

    assert expire_at(services, utcnow()) == 0                     # nothing is due yet
    assert expire_at(services, utcnow() + timedelta(seconds=5)) == 2
    for task_id in ids.values():
        with pytest.raises(NotFound):
            services.task_calls.status(task_id)
    assert services.task_groups.list(graph_id, "", 10)[0]["tasks"] == []
    assert services.task_graphs.status(graph_id)   # its group is kept a step past its tasks' expiry
    # ... and takes its members' rows with it then (a transaction per bucket spared now)
    assert len(records_of(services, ids["build"], graph_id)["members"]) == 2

    assert expire_at(services, utcnow() + EXPIRY_STEP + timedelta(seconds=5)) == 0   # the group and graph go
    for task_id in ids.values():
        assert records_of(services, task_id, graph_id) == {
            "dependents": [], "requirements": [], "members": [], "group": None}
    with pytest.raises(NotFound):
        services.task_graphs.status(graph_id)
    assert expire_at(services, utcnow() + EXPIRY_STEP + timedelta(seconds=5)) == 0   # repeatable: nothing left


def test_an_unresolved_task_waits_for_its_deadline_before_it_is_deleted(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, **short_lived(2)))
    later = utcnow() + timedelta(seconds=4)
    assert services.task_expiry.sweep(now=later) == 0            # pending still: indexed by the deadline resolver
    assert services.task_calls.status(task_id)["state"] == "pending"
    assert services.deadline_resolver.sweep(now=later) == 1
    assert services.task_expiry.sweep(now=later) == 1
    with pytest.raises(NotFound):
        services.task_calls.status(task_id)


def test_a_group_lives_until_its_latest_task_expires(services, task_queue_id):
    group_id = new_slugid()
    soon, later = new_slugid(), new_slugid()
    services.task_calls.create(soon, make_task(task_queue_id, taskGroupId=group_id, **short_lived(2)))
    services.task_calls.create(later, make_task(task_queue_id, taskGroupId=group_id, **short_lived(60)))
    run(services, task_queue_id)
    assert expire_at(services, utcnow() + timedelta(seconds=4)) == 1
    listed = services.task_groups.list(group_id, "", 1000)[0]["tasks"]
    assert [entry["status"]["taskId"] for entry in listed] == [later]
    assert expire_at(services, utcnow() + timedelta(seconds=62)) == 1
    assert services.task_groups.get(group_id)   # kept a step past its latest task's expiry
    assert expire_at(services, utcnow() + EXPIRY_STEP + timedelta(seconds=62)) == 0
    with pytest.raises(NotFound):
        services.task_groups.get(group_id)


def test_an_expired_tasks_member_rows_go_with_it_when_its_group_lives_on(services, task_queue_id):
    group_id = new_slugid()
    soon, later = new_slugid(), new_slugid()
    services.task_calls.create(soon, make_task(task_queue_id, taskGroupId=group_id, **short_lived(2)))
    services.task_calls.create(later, make_task(task_queue_id, taskGroupId=group_id, deadline=short_lived(60)["deadline"],
                                                expires=to_iso(utcnow() + 3 * EXPIRY_STEP)))
    run(services, task_queue_id)
    assert expire_at(services, utcnow() + timedelta(seconds=4)) == 1
    assert services.task_groups.group_table.members(group_id, "", 10) == [later]


def test_a_task_whose_deadline_sweep_came_late_still_expires(services, task_queue_id):
    """`expires` may equal the deadline, and the deadline sweep, which files the expiry, may
    reach a task a day late (a host down), after other tasks expired: it still expires."""
    now = utcnow()
    first, late = new_slugid(), new_slugid()
    services.task_calls.create(first, make_task(task_queue_id, deadline=to_iso(now + timedelta(seconds=2)),
                                           expires=to_iso(now + timedelta(days=1))))
    services.task_calls.create(late, make_task(task_queue_id, **short_lived(3)))
    next_day = now + timedelta(days=1, hours=1)
    assert services.deadline_resolver.sweep(now=next_day, max_items=1) == 1     # only the first task's deadline
    assert services.task_expiry.sweep(now=next_day) == 1                  # the first expires; the cursor moves on
    assert services.task_expiry.sweep(now=next_day) == 0
    assert services.deadline_resolver.sweep(now=next_day) == 1                   # the late one, a day late
    assert services.task_expiry.sweep(now=next_day + timedelta(seconds=1)) == 1
    with pytest.raises(NotFound):
        services.task_calls.status(late)


def test_a_task_with_more_dependencies_than_its_expiry_notes_is_read_and_deleted(services, task_queue_id):
    from shared.services.sweeps.task_expiry import NOTED_DEPENDENCIES

    lifetime = short_lived(2)
    required = [new_slugid() for _ in range(NOTED_DEPENDENCIES + 1)]
    for task_id in required:
        services.task_calls.create(task_id, make_task(task_queue_id, **lifetime))
    many = new_slugid()
    services.task_calls.create(many, make_task(task_queue_id, dependencies=required, **lifetime))
    assert expire_at(services, utcnow() + timedelta(seconds=4)) == len(required) + 1
    edges = services.dependency_tracker.dependency_table
    assert [edges.dependents(task_id, "", 10) for task_id in required[:3]] == [[], [], []]
    assert services.dependency_tracker.requirement_table.remaining(many) == []
    with pytest.raises(NotFound):
        services.task_calls.status(many)


def test_an_expired_tasks_results_documents_go_with_it(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, retries=1, **short_lived(3)))
    services.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    services.resolutions.exception(task_id, 0, "worker-shutdown")       # retried: run 1
    services.work_claimer.claim_work(task_queue_id, "wg", "w2", 1)
    services.resolutions.completed(task_id, 1)
    blobs = services.objects.blobs
    task = services.task_calls.updater.task_table.load(task_id)
    for run_id in (0, 1):                        # as their first reads write them (this task expires in seconds)
        services.artifacts.results.write(task, task.status.run(run_id))
    assert [blobs.size(results_blob(task_id, run_id)) is not None for run_id in (0, 1)] == [True, True]
    assert expire_at(services, utcnow() + timedelta(seconds=5)) == 1
    assert blobs_left(services, task_id) == []


def test_an_expiry_noted_before_runs_were_noted_deletes_no_blob(services, task_queue_id):
    """An item indexed before the documents were blobs of their own: theirs were objects with
    expiry items of their own, so the task's expiry leaves blobs alone."""
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, **short_lived(2)))
    services.task_calls.cancel(task_id)
    task = services.task_calls.updater.task_table.load(task_id)
    services.artifacts.results.write(task, task.status.run(0))     # as a read writes it
    due = utcnow() + timedelta(seconds=4)
    services.deadline_resolver.sweep(now=due)
    [item] = [item for item in services.task_expiry.index.due(due, 10) if item.key == f"task.{task_id}"]
    services.task_expiry.index.add([(item.due, item.key)], {item.key: json.dumps(
        {key: value for key, value in json.loads(item.value).items() if key != "runs"})})
    assert services.task_expiry.sweep(now=due) == 1
    assert blobs_left(services, task_id) == [results_blob(task_id, 0)]


def blobs_left(services, task_id: str) -> list[str]:
    return services.objects.blobs.keys(f"t/{task_id}/")


def test_an_expiring_task_deletes_only_the_dependency_rows_it_has(services, task_queue_id, monkeypatch):
    """A task listed on its dependencies' rows has no TaskDependencies row to delete, and one
    waiting on a single task no requirement rows: its expiry asks for neither."""
    graph_id = new_slugid()
    lifetime = short_lived()
    services.task_graphs.create(graph_id, graph(task_queue_id, build={"task": lifetime},
                                                test={"requires": ["build"], "task": lifetime}))
    ids = {entry["label"]: entry["taskId"] for entry in services.task_graphs.inspect(graph_id)["tasks"]}
    run(services, task_queue_id)
    run(services, task_queue_id)
    asked = []
    edges, requirements = services.task_expiry.dependency_table, services.task_expiry.requirement_table
    monkeypatch.setattr(edges, "forget", lambda task_id, dependencies: asked.append(("edges", task_id, dependencies)))
    monkeypatch.setattr(requirements, "forget", lambda task_id: asked.append(("requirements", task_id)))
    assert expire_at(services, utcnow() + timedelta(seconds=5)) == 2
    assert sorted(asked) == sorted([("edges", ids["build"], []), ("edges", ids["test"], [])])


def group_rows(services, group_id: str) -> list[str]:
    """Every row left in the partition of a group's own row (a lone group's only one)."""
    from shared.storage.tables.task_group_table import group_partition
    table = services.task_groups.group_table._table
    return [row["RowKey"] for row in table.query_entities("PartitionKey eq @pk",
                                                          parameters={"pk": group_partition(group_id)})]


def test_a_task_given_no_group_goes_with_its_group_in_one_transaction_and_no_graph_is_looked_for(
        services, task_queue_id, monkeypatch):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, **short_lived()))   # its group: its own id
    run(services, task_queue_id)
    assert len(group_rows(services, task_id)) > 1
    monkeypatch.setattr(services.task_expiry.graph_table, "forget", lambda graph_id: pytest.fail("a graph looked for"))
    assert expire_at(services, utcnow() + timedelta(seconds=5)) == 1
    assert group_rows(services, task_id) == []
    with pytest.raises(NotFound):
        services.task_groups.get(task_id)


def test_a_lone_group_that_changed_since_it_was_read_is_not_deleted_in_one_transaction(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, **short_lived()))
    group_table = services.task_groups.group_table
    read = group_table.load(task_id)
    assert read.lone
    services.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=task_id, **short_lived(60)))
    assert group_table.forget_lone(read) is False
    assert not group_table.load(task_id).lone and len(group_table.members(task_id, "", 10)) == 2


def test_a_graph_made_in_the_group_of_a_task_given_no_group_is_deleted_with_it_though_none_of_its_tasks_joined(
        services, task_queue_id, monkeypatch):
    graph_id = new_slugid()
    lifetime = short_lived()
    services.task_calls.create(graph_id, make_task(task_queue_id, schedulerId="task-graph-scheduler", **lifetime))
    monkeypatch.setattr(services.task_graphs.parts, "dispatch", lambda *args, **kwargs: None)  # died after its rows
    services.task_graphs.create(graph_id, graph(task_queue_id, build={"task": lifetime}))
    assert not services.task_groups.group_table.load(graph_id).lone
    run(services, task_queue_id)
    assert expire_at(services, utcnow() + timedelta(seconds=5)) == 1
    # No longer lone: a step past its task's expiry, as any shared group (and Taskcluster's).
    services.task_expiry.sweep(now=utcnow() + EXPIRY_STEP + timedelta(seconds=5))
    with pytest.raises(NotFound):
        services.task_graphs.status(graph_id)
    assert group_rows(services, graph_id) == []
