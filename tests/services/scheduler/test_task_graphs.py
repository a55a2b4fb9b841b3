"""The task-graph scheduler through its service, with the real event queue."""

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.domain import task_graph
from shared.domain.errors import Conflict, InvalidInput
from shared.domain.ids import new_slugid
from shared.services.scheduler import task_graphs
from shared.storage.patterns.buckets import WIDE
from shared.storage.tables.task_table import MAX_DEFINITION_CHARS, encode_definition
from tests.conftest import make_task, meanwhile
from tests.services.dependencies.test_dependency_tracker import run


def graph(task_queue_id: str, **nodes) -> dict:
    """`graph(q, build={}, test={"requires": ["build"]})`: a request with a task per label."""
    return {"tasks": {label: {"task": make_task(task_queue_id, **node.pop("task", {})), **node}
                      for label, node in nodes.items()}}


def deliver_parts(services) -> int:
    """Hand every queued graph part to its creator, like the queue trigger does."""
    parts = services.task_graphs.parts
    delivered = 0
    while messages := parts.part_queue.receive(32, timedelta(seconds=30)):
        for message in messages:
            parts.create_part(message.body["taskGraphId"], message.body["part"])
            parts.part_queue.delete(message)
            delivered += 1
    return delivered


def labels_by_task(services, graph_id) -> dict:
    return {entry["taskId"]: entry["label"] for entry in services.task_graphs.inspect(graph_id)["tasks"]}


def run_labels(services, graph_id, task_queue_id, outcome="completed") -> list[str]:
    names = labels_by_task(services, graph_id)
    return sorted(names[task_id] for task_id in run(services, task_queue_id, outcome))


def run_all_labels(services, graph_id, task_queue_id) -> list[str]:
    """`run_labels` until nothing is pending (it claims 32 at a time)."""
    ran = []
    while batch := run_labels(services, graph_id, task_queue_id):
        ran += batch
    return ran


def state(services, graph_id) -> str:
    """The graph's state once the resolutions made so far are finished (a graph learns of
    one after the call that resolved it answers)."""
    assert services.dependency_resolver.settled()
    return services.task_graphs.status(graph_id)["status"]["state"]


def test_a_graph_runs_to_finished_with_subs(services, task_queue_id):
    graph_id = new_slugid()
    request = graph(task_queue_id, build={},
                    test={"requires": ["build"], "task": {"payload": {"artifact": {"$subs": "taskId:build"}}}})
    services.task_graphs.create(graph_id, request)
    inspect = services.task_graphs.inspect(graph_id)
    ids = {entry["label"]: entry["taskId"] for entry in inspect["tasks"]}
    assert services.task_calls.definition(ids["test"])["payload"] == {"artifact": ids["build"]}
    assert services.task_calls.definition(ids["test"])["dependencies"] == [ids["build"]]
    assert services.task_calls.definition(ids["build"])["taskGroupId"] == graph_id
    assert run_labels(services, graph_id, task_queue_id) == ["build"]
    assert state(services, graph_id) == "running"
    assert run_labels(services, graph_id, task_queue_id) == ["test"]
    assert state(services, graph_id) == "finished"


def test_a_large_graph_has_a_group_of_wide_buckets_and_runs_to_finished(services, task_queue_id, monkeypatch):
    monkeypatch.setattr(task_graphs, "WIDE_GRAPH_TASKS", 5)
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, root={},
                                                **{f"leaf-{i}": {"requires": ["root"]} for i in range(6)}))
    deliver_parts(services)
    group = services.task_groups.group_table.load(graph_id)
    assert group.bucket_width == WIDE
    members = services.task_groups.list(graph_id, "", 1000)[0]["tasks"]
    assert len(members) == 7
    assert run_labels(services, graph_id, task_queue_id) == ["root"]
    assert len(run_all_labels(services, graph_id, task_queue_id)) == 6
    assert state(services, graph_id) == "finished"
    assert services.task_groups.group_table.load(graph_id).resolved
    small = new_slugid()
    services.task_graphs.create(small, graph(task_queue_id, only={}))
    assert services.task_groups.group_table.load(small).bucket_width == 1


def test_creating_the_same_graph_twice_is_idempotent_and_a_different_one_conflicts(services, task_queue_id):
    graph_id = new_slugid()
    request = graph(task_queue_id, a={}, b={"requires": ["a"]})
    first = services.task_graphs.create(graph_id, request)
    assert services.task_graphs.create(graph_id, request) == first
    assert len(services.task_graphs.inspect(graph_id)["tasks"]) == 2
    with pytest.raises(Conflict):
        services.task_graphs.create(graph_id, graph(task_queue_id, a={}))


@pytest.mark.parametrize("nodes, named", [
    ({"a": {"requires": ["b"]}, "b": {"requires": ["a"]}}, "a, b"),
    ({"a": {"requires": ["ghost"]}}, "ghost"),
    ({"a": {"task": {"payload": {"x": {"$subs": "taskId:ghost"}}}}}, "ghost"),
    ({"a": {"task": {"retries": 100}}}, "tasks.a.task.retries"),
])
def test_bad_graphs_name_the_problem_and_create_nothing(services, task_queue_id, nodes, named):
    graph_id = new_slugid()
    with pytest.raises(InvalidInput, match=named):
        services.task_graphs.create(graph_id, graph(task_queue_id, **nodes))
    with pytest.raises(Exception):
        services.task_graphs.status(graph_id)
    assert services.task_queues.pending_count(task_queue_id)["pendingTasks"] == 0


def test_reruns_then_blocked_with_the_blocker_and_what_cannot_run(services, task_queue_id):
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, flaky={"reruns": 1},
                                                after={"requires": ["flaky"]}, last={"requires": ["after"]}))
    assert run_labels(services, graph_id, task_queue_id, "failed") == ["flaky"]
    assert state(services, graph_id) == "running"              # rerun automatically
    assert run_labels(services, graph_id, task_queue_id, "failed") == ["flaky"]
    assert state(services, graph_id) == "blocked"
    inspect = services.task_graphs.inspect(graph_id)
    assert inspect["blockedBy"] == ["flaky"] and inspect["unreachable"] == ["after", "last"]
    flaky = next(entry for entry in inspect["tasks"] if entry["label"] == "flaky")
    assert flaky["rerunsLeft"] == 0 and flaky["state"] == "failed"
    assert run(services, task_queue_id) == []


def test_a_blocker_rerun_by_hand_unblocks_the_graph_when_it_completes(services, task_queue_id):
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, blocker={}, other={},
                                                after={"requires": ["blocker"]}))
    names = labels_by_task(services, graph_id)
    blocker = next(task_id for task_id, label in names.items() if label == "blocker")
    claims = services.work_claimer.claim_work(task_queue_id, "wg", "w", 32)["tasks"]
    for claim in claims:   # the blocker fails for good (no reruns), the other stays running
        if claim["status"]["taskId"] == blocker:
            services.resolutions.failed(blocker, claim["runId"])
    assert state(services, graph_id) == "blocked"

    services.task_calls.rerun(blocker)
    assert run_labels(services, graph_id, task_queue_id) == ["blocker"]   # its run 1 completes

    # Other labels are still open (the graph is not finished), yet this completion unblocks
    # it, in its row too: so the last completion, a first run, finishes it.
    assert services.task_graphs.graph_table.load_graph(graph_id).blocked_by == ()
    other = next(claim for claim in claims if claim["status"]["taskId"] != blocker)
    services.resolutions.completed(other["status"]["taskId"], other["runId"])
    assert run_labels(services, graph_id, task_queue_id) == ["after"]
    assert state(services, graph_id) == "finished"


def test_a_redelivered_failure_reruns_only_once(services, task_queue_id):
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, flaky={"reruns": 3}))
    task_id = run(services, task_queue_id, "failed")[0]
    assert services.dependency_resolver.handle(task_id, 0) is True             # handle it again
    status = services.task_calls.status(task_id)
    assert len(status["runs"]) == 2
    assert services.task_graphs.inspect(graph_id)["tasks"][0]["rerunsLeft"] == 2


def test_extend_adds_tasks_requiring_existing_labels(services, task_queue_id):
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, build={}))
    run_labels(services, graph_id, task_queue_id)
    assert state(services, graph_id) == "finished"
    extension = graph(task_queue_id, deploy={"requires": ["build"]})
    services.task_graphs.extend(graph_id, extension)
    assert state(services, graph_id) == "running"
    assert services.task_graphs.extend(graph_id, extension)["status"]["state"] == "running"  # idempotent
    assert run_labels(services, graph_id, task_queue_id) == ["deploy"]
    assert state(services, graph_id) == "finished"
    for clash in ("build", "deploy"):   # a label of the graph's creation, or of an extension
        with pytest.raises(InvalidInput, match=f"already in the graph: {clash}"):
            services.task_graphs.extend(graph_id, graph(task_queue_id, **{clash: {}}))


def test_a_fan_in_of_long_labels_is_stored_and_inspected(services, task_queue_id):
    # 300 labels of 120 characters: the fan-in's requires as labels (36,000+ characters)
    # would not fit one column, nor would 10,000 labels of 128 fit a row.
    children = [f"child-{i:03d}-" + "x" * 110 for i in range(300)]
    graph_id = new_slugid()
    request = graph(task_queue_id, **{child: {} for child in children}, join={"requires": children})
    assert services.task_graphs.create(graph_id, request)["status"]["state"] == "creating"
    assert deliver_parts(services) == 4
    assert state(services, graph_id) == "running"

    entries = {entry["label"]: entry for entry in services.task_graphs.inspect(graph_id)["tasks"]}
    assert entries["join"]["requires"] == children
    assert {tuple(entries[child]["dependents"]) for child in children} == {("join",)}
    assert len(services.task_calls.definition(entries["join"]["taskId"])["dependencies"]) == 300


def test_a_fan_in_of_10000_with_a_large_definition_fits_its_parts_row(services, task_queue_id):
    """The largest node a graph may hold (10,000 requirements, a definition near its limit)
    is kept in one part's row within storage's 1 MiB (UTF-16: two bytes a character; Azurite
    does not enforce it, Azure does): its required taskIds are not kept twice."""
    children = [f"c{i:04d}" for i in range(9_999)]
    payload = {"blob": "x" * (MAX_DEFINITION_CHARS - 10_000 * 25 - 5_000)}
    request = graph(task_queue_id, **{child: {} for child in children},
                    join={"requires": children, "task": {"payload": payload}})
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, request)
    graphs = services.task_graphs.graph_table
    join = task_graph.task_id_for(graph_id, "join")
    part = next(part for part in map(lambda key: graphs.load_part(graph_id, key), graphs.parts(graph_id))
                if any(node["taskId"] == join for node in part.nodes))
    node = next(node for node in part.nodes if node["taskId"] == join)
    assert len(encode_definition(node["definition"])) > MAX_DEFINITION_CHARS - 10_000
    assert 2 * len(json.dumps(part.nodes, separators=(",", ":"))) < 1_000_000


def test_a_graph_is_stored_as_parts_of_tasks_in_task_id_order(services, task_queue_id):
    """Each part's rows of the graph, the group and the dependencies then fall in few buckets."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, **{f"task-{i:03d}": {} for i in range(250)}))
    graphs = services.task_graphs.graph_table
    parts = [[node["taskId"] for node in graphs.load_part(graph_id, key).nodes] for key in graphs.parts(graph_id)]
    flat = [task_id for part in parts for task_id in part]
    assert [len(part) for part in parts] == [100, 100, 50] and flat == sorted(flat)
    assert deliver_parts(services) == 3
    assert sorted(labels_by_task(services, graph_id)) == flat


def test_a_graphs_rows_list_their_dependents_across_parts_and_a_fan_outs_root_uses_the_table(services,
                                                                                              task_queue_id):
    """Who waits on whom is known to the whole graph: a task's row, created in one part,
    lists its dependents of other parts (unless they are too many: then the table holds
    them, written by each dependent's part)."""
    from shared.domain.dependencies import LISTED_DEPENDENTS

    children = {f"child-{number:03d}": {"requires": ["root"]} for number in range(150)}
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, root={}, **children,
                                                join={"requires": sorted(children)}, last={"requires": ["join"]}))
    assert deliver_parts(services) == 2
    ids = {label: task_id for task_id, label in labels_by_task(services, graph_id).items()}
    rows, edges = services.task_calls.task_table, services.dependency_tracker.dependency_table
    root = rows.load(ids["root"])
    assert (root.dependents, root.more_dependents) == ((), True) and 150 > LISTED_DEPENDENTS
    assert {dependent.task_id for dependent in edges.dependents(ids["root"], "", 1000)} == {
        ids[child] for child in children}
    for label, dependent in [*((child, "join") for child in children), ("join", "last")]:
        record = rows.load(ids[label])
        assert [d.task_id for d in record.dependents] == [ids[dependent]] and not record.more_dependents, label
        assert edges.dependents(ids[label], "", 10) == []
    ran = run_all_labels(services, graph_id, task_queue_id)
    assert (ran[0], sorted(ran[1:-2]), ran[-2:]) == ("root", sorted(children), ["join", "last"])
    assert state(services, graph_id) == "finished"


def test_a_large_extension_answers_creating_and_its_parts_are_created_stage_by_stage(services, task_queue_id,
                                                                                      monkeypatch):
    """An extension beyond one part is stored and answered at once; its parts are created by
    the queue trigger, each stage once the earlier ones exist, while its first tasks already
    run. Dependents come first: the join, which requires children of both parts, is created
    with the first, waiting on children that do not exist yet, and reads none of them."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, root={}))
    assert run_labels(services, graph_id, task_queue_id) == ["root"]
    assert state(services, graph_id) == "finished"
    children = {f"child-{number:03d}": {"requires": ["root"]} for number in range(150)}
    extension = graph(task_queue_id, **children, join={"requires": sorted(children)})
    assert services.task_graphs.extend(graph_id, extension)["status"]["state"] == "creating"
    graphs = services.task_graphs.graph_table
    assert [key.split(".")[0] for key in graphs.parts(graph_id)] == ["00000", "00001"]
    with pytest.raises(Conflict, match="creating"):   # one extension at a time
        services.task_graphs.extend(graph_id, graph(task_queue_id, other={}))
    tracker, read = services.task_graphs.parts.dependency_tracker, []
    real_load = tracker._load
    monkeypatch.setattr(tracker, "_load", lambda task_id: read.append(task_id) or real_load(task_id))

    parts, messages = services.task_graphs.parts, services.task_graphs.parts.part_queue
    sent = messages.receive(32, timedelta(seconds=30))
    assert [message.body["part"] for message in sent] == graphs.parts(graph_id)[:1]   # the first stage only
    parts.create_part(graph_id, sent[0].body["part"])
    messages.delete(sent[0])
    inspected = {task["label"]: task for task in services.task_graphs.inspect(graph_id)["tasks"]}
    assert inspected["join"]["state"] == "unscheduled" and inspected["join"]["requires"] == sorted(children)
    ran = run_all_labels(services, graph_id, task_queue_id)   # the first part's children run at once
    assert len(ran) == 99 and "join" not in ran and state(services, graph_id) == "creating"
    deliver_parts(services)                                # then the stage of the other children
    assert graphs.parts(graph_id) == [] and state(services, graph_id) == "running"
    assert services.task_graphs.extend(graph_id, extension)["status"]["state"] == "running"   # done: a no-op
    assert graphs.parts(graph_id) == []
    rest = run_all_labels(services, graph_id, task_queue_id)   # the join once the last child completed
    assert rest[-1] == "join" and sorted(ran + rest) == sorted([*children, "join"])
    assert state(services, graph_id) == "finished"
    ids = labels_by_task(services, graph_id)
    assert {ids.get(task_id, task_id) for task_id in read} == {"root"}   # no child read to create the join


def test_an_extensions_chain_is_created_last_link_first_and_runs_in_order(services, task_queue_id):
    """A chain within an extension, hanging from a task of the graph still pending: the
    parts come last link first (each stage's links are required only by links of earlier
    stages), and a task requiring both a link and the pending task (read, as tasks outside
    the extension are) runs once both completed."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, root={}))
    links = [f"chain-{number:03d}" for number in range(120)]
    extension = graph(task_queue_id, **{link: {"requires": [links[number - 1] if number else "root"]}
                                        for number, link in enumerate(links)},
                      mixed={"requires": ["root", links[-1]]})
    services.task_graphs.extend(graph_id, extension)
    graphs = services.task_graphs.graph_table
    assert [key.split(".")[0] for key in graphs.parts(graph_id)] == ["00000", "00001"]
    assert deliver_parts(services) == 2 and state(services, graph_id) == "running"
    ran = run_all_labels(services, graph_id, task_queue_id)
    assert ran == ["root", *links, "mixed"]
    assert state(services, graph_id) == "finished"


def test_an_extension_part_created_twice_writes_nothing_again(services, task_queue_id, monkeypatch):
    """A part's handler dies after some of its tasks ran; the part is handled again (it was
    marked begun): the tasks that exist are found, not written again (a completed task's
    label is not reopened, nor is it scheduled again), and the rest are created."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, root={}))
    run_labels(services, graph_id, task_queue_id)
    children = {f"child-{number:03d}": {"requires": ["root"]} for number in range(120)}
    services.task_graphs.extend(graph_id, graph(task_queue_id, **children))
    creation, real = services.task_graphs.creation, services.task_graphs.creation.carry_out

    def dying(plan, now):
        some = dict(list(plan.new.items())[:40])
        real(replace(plan, order=list(some), new=some), now)
        raise RuntimeError("the process died here")
    monkeypatch.setattr(creation, "carry_out", dying)
    first, second = services.task_graphs.parts.part_queue.receive(32, timedelta(seconds=30))
    with pytest.raises(RuntimeError):
        services.task_graphs.parts.create_part(graph_id, first.body["part"])
    monkeypatch.setattr(creation, "carry_out", real)
    ran = run_all_labels(services, graph_id, task_queue_id)
    assert len(ran) == 40
    services.task_graphs.parts.create_part(graph_id, first.body["part"])   # delivered again at once:
    assert services.task_graphs.graph_table.parts(graph_id) and run_all_labels(services, graph_id, task_queue_id) == []
    monkeypatch.setattr(services.task_graphs.parts, "lease", timedelta(0))  # left alone until a lease ran out
    services.task_graphs.parts.create_part(graph_id, first.body["part"])   # taken over
    services.task_graphs.parts.create_part(graph_id, second.body["part"])
    assert state(services, graph_id) == "running"
    rest = run_all_labels(services, graph_id, task_queue_id)
    assert sorted(ran + rest) == sorted(children) and not set(ran) & set(rest)
    assert state(services, graph_id) == "finished"


def test_a_late_duplicate_of_a_part_writes_nothing_once_its_graph_ran(services, task_queue_id, monkeypatch):
    """A second message of a part (the repair sweep's, say) is handled by a process that read
    the part just before the first handler began it, and goes on once the graph has run to
    its end: its label and group rows would open a completed label and leave an unresolved
    member (the graph running, the group unresolved, for good). It finds the part changed
    since it read it, and writes nothing."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, **{f"t{number:03d}": {} for number in range(150)}))
    graphs = services.task_graphs.graph_table
    read_early = graphs.load_part(graph_id, graphs.parts(graph_id)[0])
    deliver_parts(services)
    assert len(run_all_labels(services, graph_id, task_queue_id)) == 150
    assert state(services, graph_id) == "finished"
    monkeypatch.setattr(graphs, "load_part", lambda graph_id, key: read_early)
    services.task_graphs.parts.create_part(graph_id, read_early.key)
    assert state(services, graph_id) == "finished" and not graphs.any_open(graph_id)
    assert not services.task_groups.group_table.any_unresolved(graph_id)


def test_a_part_being_created_is_left_to_its_handler_and_deleted_only_by_it(services, task_queue_id, monkeypatch):
    """While one handler creates a part, a duplicate message leaves it alone; a handler that
    took the part over (the first presumed dead, a lease after it began) ends it, and the
    first, slow only, finds so when it is done instead of deleting it."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, **{f"t{number:03d}": {} for number in range(150)}))
    parts, graphs = services.task_graphs.parts, services.task_graphs.graph_table
    first, second = parts.part_queue.receive(32, timedelta(seconds=30))
    creation, real = services.task_graphs.creation, services.task_graphs.creation.carry_out
    seen = []

    def slow(plan, now):   # the first handler, midway: its part is handled again twice
        monkeypatch.setattr(creation, "carry_out", real)
        parts.create_part(graph_id, first.body["part"])
        seen.append(len(graphs.parts(graph_id)))       # left alone: both parts are still to create
        monkeypatch.setattr(parts, "lease", timedelta(0))
        parts.create_part(graph_id, first.body["part"])
        seen.append(len(graphs.parts(graph_id)))       # taken over and created
        return real(plan, now)
    monkeypatch.setattr(creation, "carry_out", slow)
    parts.create_part(graph_id, first.body["part"])
    assert seen == [2, 1] and graphs.parts(graph_id) == [second.body["part"]]
    parts.create_part(graph_id, second.body["part"])
    assert state(services, graph_id) == "running"
    assert sorted(run_all_labels(services, graph_id, task_queue_id)) == [f"t{number:03d}" for number in range(150)]
    assert state(services, graph_id) == "finished"


def test_r1_a_worker_claiming_while_a_graph_is_created_loses_no_dependent(task_queue_id, monkeypatch):
    """R1: after every task row written, the quickest possible worker claims and completes
    whatever it can and its 'task resolved' events are handled, while the rest of the graph
    (then of an extension whose first task can run at once) is still being written. No
    dependent may be left unscheduled (before the fix, children written after the root
    stayed unscheduled for good)."""
    from concurrent.futures import ThreadPoolExecutor

    from shared.storage.tables import task_table
    from tests.conftest import memory_services

    services = memory_services(claim_work_wait=0)
    tasks, ran = services.task_graphs.creation.task_table, []
    real_insert = tasks._insert_chunk   # one transaction of task rows, or its rows one by one

    def insert(chunk):
        records = real_insert(chunk)
        ran.extend(meanwhile(lambda: run(services, task_queue_id)))
        return records
    monkeypatch.setattr(tasks, "_insert_chunk", insert)
    # One writer, so the order of the rows is the order the creation chose, not a race's.
    monkeypatch.setattr(task_table, "TASK_INSERTS", ThreadPoolExecutor(max_workers=1))
    graph_id = new_slugid()
    children = {f"child-{number}": {"requires": ["root"]} for number in range(10)}
    services.task_graphs.create(graph_id, graph(task_queue_id, root={}, **children))
    assert ran == []                        # nothing of a graph runs before all of it exists
    assert run_labels(services, graph_id, task_queue_id) == ["root"]
    assert run_labels(services, graph_id, task_queue_id) == sorted(children)

    extension = graph(task_queue_id, mid={"requires": ["root"]}, leaf={"requires": ["mid"]})
    services.task_graphs.extend(graph_id, extension)   # `mid` can run as soon as it exists
    assert run_labels(services, graph_id, task_queue_id) + [labels_by_task(services, graph_id)[task_id]
                                                            for task_id in ran] == ["leaf", "mid"]
    assert state(services, graph_id) == "finished"


def test_r3_an_extension_interrupted_by_a_crash_is_resumed_by_sending_it_again(services, task_queue_id,
                                                                             monkeypatch):
    """R3: the process dies after the extension's labels were written (before its tasks, or
    after them but before it was marked done); the same extension sent again answers (the
    graph `creating`: the dead process's part is left to it until its lease runs out), and
    completes it once the lease has run out."""
    for crash_after_tasks in (False, True):
        monkeypatch.setattr(services.task_graphs.parts, "lease", timedelta(minutes=5))
        graph_id = new_slugid()
        services.task_graphs.create(graph_id, graph(task_queue_id, build={}))
        creation, real = services.task_graphs.creation, services.task_graphs.creation.carry_out

        def crashing(plan, now, crash_after_tasks=crash_after_tasks):
            monkeypatch.setattr(creation, "carry_out", real)  # one crash only
            if crash_after_tasks:
                real(plan, now)
            raise RuntimeError("the process died here")
        monkeypatch.setattr(creation, "carry_out", crashing)
        extension = graph(task_queue_id, test={"requires": ["build"]})
        with pytest.raises(RuntimeError):
            services.task_graphs.extend(graph_id, dict(extension))
        assert services.task_graphs.extend(graph_id, dict(extension))["status"]["state"] == "creating"
        monkeypatch.setattr(services.task_graphs.parts, "lease", timedelta(0))
        assert services.task_graphs.extend(graph_id, dict(extension))["status"]["state"] == "running"
        assert run_labels(services, graph_id, task_queue_id) == ["build"]
        assert run_labels(services, graph_id, task_queue_id) == ["test"]
        assert state(services, graph_id) == "finished"


def test_r4_extending_a_finished_graph_whose_new_task_completes_at_once_finishes_it(services, task_queue_id,
                                                                                  monkeypatch):
    """R4: the extension's task is claimed, completed and handled before `extend` returns;
    the graph must end finished, not running for good."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, build={}))
    assert run_labels(services, graph_id, task_queue_id) == ["build"]
    assert state(services, graph_id) == "finished"
    creation, real = services.task_graphs.creation, services.task_graphs.creation.carry_out

    def carry_out_and_run(plan, now):
        statuses = real(plan, now)
        assert len(meanwhile(lambda: run(services, task_queue_id))) == 1   # the quickest possible worker
        return statuses
    monkeypatch.setattr(creation, "carry_out", carry_out_and_run)
    services.task_graphs.extend(graph_id, graph(task_queue_id, more={}))
    assert state(services, graph_id) == "finished"


def test_a_graph_whose_roots_complete_before_it_starts_running_finishes(services, task_queue_id, monkeypatch):
    """The quickest worker completes the only root between its scheduling and the graph's
    state leaving 'creating': the graph must end finished, not running for good."""
    dependencies, real = services.task_graphs.parts.dependency_tracker, services.task_graphs.parts.dependency_tracker.schedule

    def schedule_and_run(task_id, why):
        scheduled = real(task_id, why)
        assert len(meanwhile(lambda: run(services, task_queue_id))) == 1
        return scheduled
    monkeypatch.setattr(dependencies, "schedule", schedule_and_run)
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, only={}))
    assert state(services, graph_id) == "finished"


def test_an_unblocking_completion_that_raced_the_last_one_finishes_the_graph(services, task_queue_id, monkeypatch):
    """The blocker's rerun completes and reads that a label is still open; the last label
    then completes and, finding the graph still blocked, leaves its state so; the blocker's
    write comes last. The graph must end finished, not running with nothing left to run (the
    last completion writes the graph row even unchanged: the blocker's write is refused and
    it reads again)."""
    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, blocker={}, last={}))
    names = labels_by_task(services, graph_id)
    blocker, last = (next(t for t, label in names.items() if label == wanted) for wanted in ("blocker", "last"))
    claims = {claim["status"]["taskId"]: claim["runId"]
              for claim in services.work_claimer.claim_work(task_queue_id, "wg", "w", 32)["tasks"]}
    services.resolutions.failed(blocker, claims[blocker])
    assert state(services, graph_id) == "blocked"
    services.task_calls.rerun(blocker)
    assert [c["status"]["taskId"] for c in services.work_claimer.claim_work(task_queue_id, "wg", "w", 32)["tasks"]] == \
        [blocker]

    table, any_open = services.task_graphs.graph_table, services.task_graphs.graph_table.any_open
    armed = [True]

    def stale_then_last_completes(wanted_graph, *task_id):
        seen = any_open(wanted_graph, *task_id)
        if armed[0]:
            armed[0] = False
            meanwhile(lambda: services.resolutions.completed(last, claims[last]))   # handled in full meanwhile
        return seen
    monkeypatch.setattr(table, "any_open", stale_then_last_completes)
    services.resolutions.completed(blocker, 1)

    assert services.dependency_resolver.settled() and not armed[0]
    assert table.load_graph(graph_id).state == "finished" and state(services, graph_id) == "finished"


def test_parts_whose_messages_went_down_with_a_process_are_sent_again_by_the_repair_sweep(services, task_queue_id):
    import time

    graph_id = new_slugid()
    request = graph(task_queue_id, **{f"t{number}": {} for number in range(150)})
    assert services.task_graphs.create(graph_id, request)["status"]["state"] == "creating"
    messages = services.task_graphs.parts.part_queue
    assert len(messages.receive(32, timedelta(minutes=5))) == 2   # held by a process that then died
    time.sleep(1.2)                                               # the graph's check comes due
    assert services.repairs.sweep() == 1
    assert deliver_parts(services) == 2
    assert state(services, graph_id) == "running"
    time.sleep(1.2)
    assert services.repairs.sweep() == 0                          # progress made: nothing sent again
    assert deliver_parts(services) == 0


def test_a_part_whose_handler_died_is_sent_again_a_lease_after_it_began(services, task_queue_id, monkeypatch):
    """A part begun by a handler that then died keeps its mark: the repair sweep sends it
    again once its lease ran out (not before: its handler may be alive), to be taken over;
    a part not begun whose message the dead process held is sent again once a look finds
    no progress since the last one."""
    import time

    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, **{f"t{number:03d}": {} for number in range(150)}))
    parts = services.task_graphs.parts
    first, second = parts.part_queue.receive(32, timedelta(minutes=5))   # held by a process that dies
    monkeypatch.setattr(services.task_graphs.creation, "carry_out", lambda plan, now: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        parts.create_part(graph_id, first.body["part"])                   # begun, then the process died
    monkeypatch.undo()
    time.sleep(1.2)
    assert services.repairs.sweep() == 0          # a part begun since the last look: progress
    monkeypatch.setattr(parts, "lease", timedelta(seconds=1))
    time.sleep(1.2)
    assert services.repairs.sweep() == 1          # its lease ran out, and no progress since: both sent again
    sent = parts.part_queue.receive(32, timedelta(minutes=5))
    assert sorted(message.body["part"] for message in sent) == [first.body["part"], second.body["part"]]
    parts.create_part(graph_id, first.body["part"])
    parts.create_part(graph_id, second.body["part"])
    assert state(services, graph_id) == "running"
    assert len(run_all_labels(services, graph_id, task_queue_id)) == 150


def test_a_graph_that_stalls_again_is_looked_at_later_each_time(services, task_queue_id):
    """Parts only slow to be created (a busy host holds their messages) are not sent again
    at every look: each look that finds no progress doubles the wait before the next."""
    import time

    graph_id = new_slugid()
    services.task_graphs.create(graph_id, graph(task_queue_id, **{f"t{number}": {} for number in range(150)}))
    messages = services.task_graphs.parts.part_queue
    held = timedelta(minutes=5)
    assert len(messages.receive(32, held)) == 2            # held by a process still busy with them
    time.sleep(1.2)                                          # one repair delay
    assert services.repairs.sweep() == 1                     # no progress: sent again
    assert len(messages.receive(32, held)) == 2              # and held again
    time.sleep(1.2)
    assert services.repairs.sweep() == 0                     # the next look waits two delays
    time.sleep(1.0)
    assert services.repairs.sweep() == 1
    assert len(messages.receive(32, held)) == 2
    time.sleep(2.2)
    assert services.repairs.sweep() == 0                     # then four
    for number in services.task_graphs.graph_table.parts(graph_id):
        services.task_graphs.parts.create_part(graph_id, number)   # the busy process gets through
    assert state(services, graph_id) == "running"


def test_a_graph_whose_group_is_sealed_while_it_is_created_still_gets_every_task(services, task_queue_id):
    """The PUT accepted the graph; a seal that comes while its parts are being created
    refuses new tasks to the group, not the graph's own (they would be poisoned, and the
    graph left creating for good)."""
    from shared.domain.errors import Conflict as Refused
    from tests.conftest import make_task

    graph_id = new_slugid()
    request = graph(task_queue_id, **{f"t{number}": {} for number in range(150)})
    services.task_graphs.create(graph_id, request)
    messages = services.task_graphs.parts.part_queue
    first, second = messages.receive(32, timedelta(seconds=30))
    services.task_graphs.parts.create_part(graph_id, first.body["part"])
    services.task_groups.seal(graph_id, "2026-11-23T00:00:00.000Z")
    services.task_graphs.parts.create_part(graph_id, second.body["part"])
    assert state(services, graph_id) == "running"
    assert len(services.task_graphs.inspect(graph_id)["tasks"]) == 150
    with pytest.raises(Refused, match="sealed"):
        services.task_calls.create(new_slugid(), make_task(task_queue_id, taskGroupId=graph_id,
                                                      schedulerId="task-graph-scheduler"))
