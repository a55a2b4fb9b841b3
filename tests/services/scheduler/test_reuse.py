"""Graphs that reuse what is indexed (`reuse.index`): a label takes the id of a completed task
found in the index, no task is created for it, its dependents run at once or once the rest of
what they require completed, and inspect says so; what may not be reused is created."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.domain.errors import Conflict, NotFound
from shared.domain.ids import new_slugid
from shared.domain.task_graph import task_id_for
from shared.domain.timestamps import to_iso, utcnow
from tests.services.scheduler.test_task_graphs import graph, run_all_labels, run_labels, state


def in_days(days: float) -> str:
    return to_iso(utcnow() + timedelta(days=days))


def toolchain_graph(task_queue_id: str, namespace: str, **more) -> dict:
    """toolchain (indexed at `namespace` when it completes, reused from there) <- build <- test."""
    return graph(task_queue_id,
                 toolchain={"reuse": {"index": namespace}, "task": {"routes": [f"index.{namespace}"]}},
                 build={"requires": ["toolchain"], "task": {"payload": {"toolchain": {"$subs": "taskId:toolchain"}}}},
                 test={"requires": ["build"]}, **more)


def created(services, graph_id: str) -> dict[str, str]:
    """label -> taskId of the tasks the graph created."""
    return {entry["label"]: entry["taskId"] for entry in services.task_graphs.inspect(graph_id)["tasks"]}


def test_a_graph_submitted_twice_reuses_its_indexed_task_the_second_time(services, task_queue_id):
    first, second = new_slugid(), new_slugid()
    request = toolchain_graph(task_queue_id, "proj.cache.toolchain")
    services.task_graphs.create(first, request)
    assert services.task_graphs.inspect(first)["reused"] == []             # nothing indexed yet
    assert run_all_labels(services, first, task_queue_id) == ["toolchain", "build", "test"]
    assert state(services, first) == "finished"
    toolchain = created(services, first)["toolchain"]
    assert services.index.find("proj.cache.toolchain")["taskId"] == toolchain

    services.task_graphs.create(second, request)
    inspected = services.task_graphs.inspect(second)
    assert inspected["reused"] == [{"label": "toolchain", "taskId": toolchain, "namespace": "proj.cache.toolchain"}]
    assert sorted(created(services, second)) == ["build", "test"]          # no task for the reused label
    with pytest.raises(NotFound):
        services.task_calls.status(task_id_for(second, "toolchain"))
    build = services.task_calls.definition(created(services, second)["build"])
    assert build["payload"]["toolchain"] == toolchain and toolchain in build["dependencies"]
    assert services.task_calls.status(created(services, second)["build"])["state"] == "pending"   # at once
    assert run_all_labels(services, second, task_queue_id) == ["build", "test"]
    assert state(services, second) == "finished"


def test_a_label_waits_for_the_rest_of_what_it_requires(services, task_queue_id):
    """A dependent of a reused task and of one the graph creates runs once the latter completed."""
    services.index.insert("proj.done.lib", {"taskId": _completed_task(services, task_queue_id), "rank": 0,
                                            "data": {}, "expires": in_days(30)})
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, lib={"reuse": {"index": "proj.done.lib"}},
                                                gen={}, app={"requires": ["lib", "gen"]}))
    assert sorted(created(services, graph_id)) == ["app", "gen"]
    assert run_labels(services, graph_id, task_queue_id) == ["gen"]
    assert run_labels(services, graph_id, task_queue_id) == ["app"]
    assert state(services, graph_id) == "finished"


def _completed_task(services, task_queue_id: str, outcome: str = "completed", **definition) -> str:
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, only={"task": definition}))
    run_labels(services, graph_id, task_queue_id, outcome)
    return created(services, graph_id)["only"]


@pytest.mark.parametrize("why", ["expired entry", "failed task", "expires before the graph's deadline"])
def test_what_may_not_be_reused_is_created_and_the_next_namespace_is_tried(services, task_queue_id, why):
    usable = _completed_task(services, task_queue_id)
    if why == "failed task":
        first = {"taskId": _completed_task(services, task_queue_id, "failed"), "expires": in_days(30)}
    elif why == "expired entry":
        first = {"taskId": usable, "expires": in_days(-1)}
    else:   # its task expires in two hours; the graph's deadline is in three
        first = {"taskId": _completed_task(services, task_queue_id, expires=in_days(2 / 24)), "expires": in_days(30)}
    services.index.insert("proj.try.first", {**first, "rank": 0, "data": {}})
    services.index.insert("proj.try.second", {"taskId": usable, "rank": 0, "data": {}, "expires": in_days(30)})
    late = {"deadline": in_days(3 / 24)}
    alone, fallback = new_slugid(), new_slugid()
    services.task_graphs.create(alone, graph(task_queue_id, dep={"reuse": {"index": "proj.try.first"}, "task": late}))
    assert services.task_graphs.inspect(alone)["reused"] == [] and list(created(services, alone)) == ["dep"]
    services.task_graphs.create(fallback, graph(task_queue_id, dep={
        "reuse": {"index": ["proj.try.first", "proj.try.missing", "proj.try.second"]}, "task": late}))
    assert [(r["label"], r["taskId"], r["namespace"]) for r in services.task_graphs.inspect(fallback)["reused"]] == \
        [("dep", usable, "proj.try.second")]


def test_a_graph_whose_every_label_is_reused_is_finished_at_once(services, task_queue_id):
    services.index.insert("proj.all.x", {"taskId": _completed_task(services, task_queue_id), "rank": 0, "data": {},
                                         "expires": in_days(30)})
    graph_id = new_slugid()
    assert services.task_graphs.create(graph_id, graph(task_queue_id, x={"reuse": {"index": "proj.all.x"}}))
    assert state(services, graph_id) == "finished" and created(services, graph_id) == {}


def test_an_extension_reuses_and_requires_what_the_graph_reused(services, task_queue_id):
    services.index.insert("proj.ext.a", {"taskId": _completed_task(services, task_queue_id), "rank": 0, "data": {},
                                         "expires": in_days(30)})
    services.index.insert("proj.ext.b", {"taskId": _completed_task(services, task_queue_id), "rank": 0, "data": {},
                                         "expires": in_days(30)})
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, a={"reuse": {"index": "proj.ext.a"}}, root={}))
    assert run_all_labels(services, graph_id, task_queue_id) == ["root"]
    services.task_graphs.extend(graph_id, graph(task_queue_id, b={"reuse": {"index": "proj.ext.b"}},
                                                uses={"requires": ["a", "b", "root"],
                                                      "task": {"payload": {"a": {"$subs": "taskId:a"}}}}))
    assert sorted(r["label"] for r in services.task_graphs.inspect(graph_id)["reused"]) == ["a", "b"]
    uses = created(services, graph_id)["uses"]
    assert services.task_calls.definition(uses)["payload"]["a"] == services.index.find("proj.ext.a")["taskId"]
    assert run_all_labels(services, graph_id, task_queue_id) == ["uses"]
    assert state(services, graph_id) == "finished"


def test_a_creation_retried_after_a_crash_keeps_its_first_decision(services, task_queue_id, monkeypatch):
    services.index.insert("proj.retry.x", {"taskId": _completed_task(services, task_queue_id), "rank": 0,
                                           "data": {}, "expires": in_days(30)})
    graph_id, request = new_slugid(), graph(task_queue_id, x={"reuse": {"index": "proj.retry.x"}}, y={})
    table = services.task_graphs.graph_table
    real = table.insert_graph

    def dies(graph):   # the process dies before the graph's row is written
        raise RuntimeError("crash")
    monkeypatch.setattr(table, "insert_graph", dies)
    with pytest.raises(RuntimeError):
        services.task_graphs.create(graph_id, request)
    monkeypatch.setattr(table, "insert_graph", real)
    services.index.delete("proj.retry.x")                  # the index changed meanwhile
    services.task_graphs.create(graph_id, request)
    assert [r["label"] for r in services.task_graphs.inspect(graph_id)["reused"]] == ["x"]
    assert list(created(services, graph_id)) == ["y"]
    other = graph(task_queue_id, x={"reuse": {"index": "proj.retry.x"}}, z={})
    with pytest.raises(Conflict):                          # another request under the same id
        services.task_graphs.create(graph_id, other)
