"""Completed tasks indexed from their routes in the resolution's follow-up: what is indexed,
what it costs (nothing for a task without an index route), and that it is done again, once,
when the resolution is handled again (the crash cases are in test_resolution_faults)."""

from __future__ import annotations

from dataclasses import replace

from shared.domain.runs import RunState
from shared.services.dependencies.dependency_resolver import DependencyResolver
from shared.services.dependencies.resolution_messages import Resolution
from shared.storage.client.account import OPERATIONS
from tests.conftest import follow_ups_lost
from tests.services.dependencies.test_dependency_tracker import create, run


def resolution_of(services, task_id: str, run_id: int = 0) -> Resolution:
    return Resolution.of(services.task_calls.task_table.load(task_id), run_id)


def test_a_completed_task_is_indexed_at_each_index_route(services, task_queue_id):
    task_id = create(services, task_queue_id, routes=["index.proj.a", "index.proj.b.c", "notify.x", "index.bad..ns"],
                     extra={"index": {"rank": 3, "data": {"k": "v"}}})
    assert run(services, task_queue_id) == [task_id]
    DependencyResolver.settled()
    for path in ("proj.a", "proj.b.c"):
        found = services.index.find(path)
        assert (found["taskId"], found["rank"], found["data"]) == (task_id, 3, {"k": "v"})
    assert [n["namespace"] for n in services.index.namespaces("proj", "", 10)[0]["namespaces"]] == ["proj.b"]


def test_a_task_that_fails_or_has_no_index_route_is_not_indexed(services, task_queue_id):
    failed = create(services, task_queue_id, routes=["index.proj.failed"])
    assert run(services, task_queue_id, "failed") == [failed]
    plain = create(services, task_queue_id, routes=["notify.x"])
    assert run(services, task_queue_id) == [plain]
    DependencyResolver.settled()
    assert services.index.tasks("proj", "", 10)[0]["tasks"] == []
    assert services.index.namespaces("", "", 1000)[0]["namespaces"] == []


def test_a_completion_without_an_index_route_costs_no_storage_round_trip(services, task_queue_id):
    task_id = create(services, task_queue_id, routes=["notify.email.x"], extra={"index": {"rank": 5}})
    run(services, task_queue_id)
    resolution = resolution_of(services, task_id)
    assert resolution.state is RunState.COMPLETED and resolution.index_routes is False
    before = OPERATIONS.value
    assert services.dependency_resolver.indexer.task_resolved(resolution) == 0
    assert OPERATIONS.value == before


def test_an_indexed_completion_reads_no_definition_this_process_remembers(services, task_queue_id):
    task_id = create(services, task_queue_id, routes=["index.cheap.x"])
    run(services, task_queue_id)
    DependencyResolver.settled()
    indexer, resolution = services.dependency_resolver.indexer, resolution_of(services, task_id)
    reads = []
    real_load = indexer.task_table.load
    indexer.task_table.load = lambda *args, **kwargs: reads.append(args) or real_load(*args, **kwargs)
    try:
        assert indexer.task_resolved(resolution) == 1   # the same entry again: nothing written
    finally:
        indexer.task_table.load = real_load
    assert reads == []


def test_the_resolution_message_says_whether_the_task_has_an_index_route(services, task_queue_id):
    indexed = create(services, task_queue_id, routes=["index.msg.x"])
    plain = create(services, task_queue_id)
    run(services, task_queue_id)
    for task_id, expected in ((indexed, True), (plain, False)):
        resolution = resolution_of(services, task_id)
        assert Resolution.from_message(resolution.to_message()).index_routes is expected
    older = {key: value for key, value in resolution_of(services, plain).to_message().items() if key != "indexRoutes"}
    assert Resolution.from_message(older).index_routes is True   # a message from before: the safe side


def test_a_resolution_lost_with_its_process_is_indexed_when_handled_again(services, task_queue_id):
    task_id = create(services, task_queue_id, routes=["index.lost.x"])
    with follow_ups_lost(services):
        run(services, task_queue_id)
    assert services.index.tasks("lost", "", 10)[0]["tasks"] == []
    resolution = resolution_of(services, task_id)
    services.dependency_resolver.handle_message(resolution.to_message())   # as the claim expiry sweep announces it
    services.dependency_resolver.handle_message(replace(resolution, published=True).to_message())   # and twice
    assert [entry["taskId"] for entry in services.index.tasks("lost", "", 10)[0]["tasks"]] == [task_id]
