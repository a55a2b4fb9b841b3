"""The task-graph scheduler (seed 000): create, extend and inspect graphs, and react to
their tasks' resolutions with reruns, `blocked` and `finished`.

A graph's tasks are ordinary Queue tasks in the task group `taskGraphId`, depending on
each other through `dependencies`; the Queue's dependency tracker schedules them. This
module adds what a graph has on top: labels, reruns, and the graph's state.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Callable

from shared.runtime.thread_pools import TASK_READS
from shared.domain import lifecycle, task_definition, task_graph
from shared.domain.errors import Conflict, InvalidInput, NotFound
from shared.domain.runs import RunState, TaskState
from shared.domain.task_graph import BLOCKED, CREATING, FINISHED, RUNNING, SCHEDULER_ID, Node
from shared.domain.timestamps import utcnow
from shared.storage.errors import AlreadyExists
from shared.storage.tables.task_graph_table import EXTENDED, EXTENDING, GraphRecord, LabelRecord, TaskGraphTable
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.validation import validate
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.services.scheduler.graph_parts import INLINE_TASKS, GraphParts
from shared.services.scheduler.reuse import GraphReuse, ids as _ids
from shared.services.dependencies.resolution_messages import Resolution
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.tasks.task_creation import TaskCreation
from shared.services.tasks.task_updater import TaskUpdater

log = logging.getLogger("queue.task-graphs")
# The caller's scope check on the (normalized) tasks a call would create, before any write.
Authorize = Callable[[dict[str, dict]], None]
# A graph made with this many tasks gets a group (and rows of the graph) in wide buckets
# (see `buckets`): it, or what it is extended to, is large enough to repay them.
WIDE_GRAPH_TASKS = 5_000


class TaskGraphs:
    def __init__(self, graph_table: TaskGraphTable, task_table: TaskTable, creation: TaskCreation,
                 task_groups: TaskGroups, updater: TaskUpdater, parts: GraphParts, reuse: GraphReuse) -> None:
        self.reuse = reuse
        self.parts = parts
        self.task_groups = task_groups
        self.graph_table = graph_table
        self.task_table = task_table
        self.creation = creation
        self.updater = updater

    def create(self, graph_id: str, request: dict, authorize: Authorize = lambda definitions: None) -> dict:
        """Create a graph: check it whole, store it, and have its tasks created (see
        `graph_parts`); a large graph answers `creating` at once. The same request again
        answers with its status (resuming a creation a crash interrupted); a different one
        under the same id is a Conflict. `authorize(definitions)` checks the caller may create
        the tasks: all of them, or none when the graph exists (the request that stored it was
        checked)."""
        fingerprint = task_graph.fingerprint(request)
        graph = self.graph_table.load_graph(graph_id)
        if graph is not None and graph.fingerprint != fingerprint:
            raise Conflict(f"Task graph {graph_id} already exists with a different definition")
        if graph is not None:
            authorize({})
        if graph is not None and graph.state != CREATING:
            return self.status(graph_id)
        routing = request.get("routing", "")
        reused = self.reuse.decided(graph_id, fingerprint, request["tasks"])
        nodes = task_graph.build_nodes(graph_id, request["tasks"], {}, routing, _ids(reused))
        if graph is None:
            definitions = _definitions(nodes, utcnow())
            authorize(definitions)
            # A refusal leaves no graph behind. The taskIds are derived from this graph's
            # id, so while it has no row (no earlier attempt got that far) none exists yet.
            self.task_groups.adopt(self.creation.prepare(definitions, unused_ids=True).groups)
            self.reuse.keep(graph_id, fingerprint, request["tasks"], reused)
            if len(nodes) >= WIDE_GRAPH_TASKS:
                self.task_groups.make_wide(definitions[nodes[0].task_id])
            self.parts.store(graph_id, nodes, definitions, reused=frozenset(_ids(reused).values()))
            self.graph_table.add_label_names(graph_id, "graph", list(request["tasks"]))
            self._insert(GraphRecord(graph_id, routing, CREATING, fingerprint))
        self.parts.dispatch(graph_id, inline=len(nodes) <= INLINE_TASKS)
        log.info("task graph %s accepted with %d tasks", graph_id, len(nodes), extra={"taskGraphId": graph_id})
        return self.status(graph_id)

    def extend(self, graph_id: str, request: dict, authorize: Authorize = lambda definitions: None) -> dict:
        """Add tasks, which may require labels already in the graph: checked whole, stored,
        and created like a new graph's (see `graph_parts`), the graph `creating` meanwhile; a
        large extension answers `creating` at once. Sending the same extension again answers
        with the graph's status, and resumes it if a crash interrupted it (its labels are
        then this extension's own, not a clash). `authorize(definitions)` checks the caller
        may create the new tasks."""
        graph = self._existing(graph_id)
        fingerprint = task_graph.fingerprint(request)
        progress = self.graph_table.extension(graph_id, fingerprint)
        if progress == EXTENDED:
            authorize({})   # nothing left to create
            return self.status(graph_id)
        if progress is None and graph.state in (BLOCKED, CREATING):
            raise Conflict(f"Task graph {graph_id} is {graph.state}; it cannot be extended")
        # Its own labels, written by an earlier attempt, are no clash.
        known = {label: task_graph.task_id_for(graph_id, label)
                 for label in self.graph_table.label_names(graph_id, but=fingerprint)}
        reused = self.reuse.decided(graph_id, fingerprint, request["tasks"])
        before = self.reuse.before(graph, but=fingerprint)   # labels of the graph that reused a task
        nodes = task_graph.build_nodes(graph_id, request["tasks"], known, graph.routing,
                                       {**_ids(before), **_ids(reused)})
        definitions = _definitions(nodes, utcnow())
        authorize(definitions)
        if progress is None:
            # Its taskIds derive from the graph's id and labels new to it, so none exists:
            # not read one by one to find so (a clash is still caught when rows are inserted).
            self.creation.prepare(definitions, unused_ids=True)   # a refusal leaves no trace
            self.reuse.keep(graph_id, fingerprint, request["tasks"], reused)
            self.parts.store(graph_id, nodes, definitions, extension=fingerprint)
            self.graph_table.add_label_names(graph_id, fingerprint, list(request["tasks"]))
            self.graph_table.mark_extension(graph_id, fingerprint, EXTENDING)
        # `creating` before any new task exists: a graph whose tasks all complete meanwhile
        # must not finish while tasks are still to come (the creation's end decides).
        self._set_state(graph_id, lambda g: replace(g, state=CREATING, extension=fingerprint)
                        if g.state in (RUNNING, FINISHED) else g)
        self.parts.dispatch(graph_id, inline=len(nodes) <= INLINE_TASKS)
        log.info("task graph %s extended with %d tasks", graph_id, len(nodes), extra={"taskGraphId": graph_id})
        return self.status(graph_id)

    def _insert(self, graph: GraphRecord) -> GraphRecord:
        try:
            return self.graph_table.insert_graph(graph)
        except AlreadyExists:  # a concurrent creation: the same request, or a conflict
            existing = self.graph_table.load_graph(graph.graph_id)
            if existing.fingerprint != graph.fingerprint:
                raise Conflict(f"Task graph {graph.graph_id} already exists with a different definition") from None
            return existing

    def status(self, graph_id: str) -> dict:
        graph = self._existing(graph_id)
        if graph.state == BLOCKED:  # read only the blockers' tasks
            labels = [self.graph_table.load_label(graph_id, label) for label in graph.blocked_by]
            records = dict(zip(graph.blocked_by, TASK_READS.map(
                lambda label: self.task_table.load(label.task_id) if label else None, labels)))
            graph = _as_now(graph, records)
        return {"status": {"taskGraphId": graph_id, "schedulerId": SCHEDULER_ID, "state": graph.state}}

    def inspect(self, graph_id: str) -> dict:
        graph = self._existing(graph_id)
        labels = self.graph_table.labels(graph_id)
        records = dict(zip((label.label for label in labels),
                           TASK_READS.map(lambda label: self.task_table.load(label.task_id), labels)))
        graph = _as_now(graph, records)
        label_of = self._labels_of(graph_id, labels)
        requires = {label.label: tuple(label_of[task_id] for task_id in label.required_ids if task_id in label_of)
                    for label in labels}
        reused = self.reuse.before(graph)
        dependents: dict[str, list[str]] = {label.label: [] for label in labels}
        for label in labels:
            for required in requires[label.label]:
                dependents.setdefault(required, []).append(label.label)
        return {
            "taskGraphId": graph_id,
            "state": graph.state,
            "routing": graph.routing,
            "blockedBy": list(graph.blocked_by),
            "unreachable": sorted(task_graph.unreachable(requires, set(graph.blocked_by))),
            "tasks": [{
                "label": label.label,
                "taskId": label.task_id,
                "state": records[label.label].status.state.value if records[label.label] else "unscheduled",
                "requires": list(requires[label.label]),
                "dependents": sorted(dependents[label.label]),
                "reruns": label.reruns,
                "rerunsLeft": label.reruns_left,
            } for label in labels],
            # Labels that took an indexed task's id instead of a task of their own (`reuse`).
            "reused": [{"label": label, "taskId": task_id, "namespace": namespace}
                       for label, (task_id, namespace) in sorted(reused.items())],
        }

    def _labels_of(self, graph_id: str, labels: list[LabelRecord]) -> dict[str, str]:
        """taskId -> label, for the labels written and the tasks they require. While an
        extension is created, its dependents' labels come before those of the tasks they
        require (see `graph_parts`): those are found among the graph's label names."""
        label_of = {label.task_id: label.label for label in labels}
        unknown = {task_id for label in labels for task_id in label.required_ids if task_id not in label_of}
        if unknown:
            label_of.update((task_id, name) for name in self.graph_table.label_names(graph_id)
                            if (task_id := task_graph.task_id_for(graph_id, name)) in unknown)
        return label_of

    def task_failed(self, resolution: Resolution) -> None:
        """A task resolved without completing: a graph's is rerun, or blocks its graph (one
        that completed closes its label with its membership: see `label_completed`)."""
        if resolution.scheduler_id != SCHEDULER_ID or resolution.state is RunState.COMPLETED:
            return
        graph_id, task_id = resolution.task_group_id, resolution.task_id
        label = self.graph_table.label_of(graph_id, task_id)
        if label is None:
            return
        if not self._rerun(graph_id, label, task_id, resolution.run_id):
            self._set_state(graph_id, lambda g: replace(
                g, state=BLOCKED, blocked_by=tuple(sorted(set(g.blocked_by) | {label}))))
            log.warning("task graph %s blocked by %s (task %s)", graph_id, label, task_id,
                        extra={"taskGraphId": graph_id, "taskId": task_id})

    @staticmethod
    def closes_label(resolution: Resolution) -> bool:
        """Whether a resolution completes a graph's task (closing its label, if it has one)."""
        return resolution.scheduler_id == SCHEDULER_ID and resolution.state is RunState.COMPLETED

    def label_completed(self, graph_id: str, task_id: str, run_id: int, labels_open: bool) -> None:
        """A graph's task completed and its label was closed (no row to close if the task is
        not the graph's), leaving `labels_open`; the label's name is read only when the graph
        row may change."""
        finished = not labels_open
        if not finished and run_id == 0:
            # Nothing to change: a label is in blockedBy only after a run of it failed for
            # good, so its completion is a later run. Most completions skip the graph row.
            return
        label = self.graph_table.label_of(graph_id, task_id)
        if label is None:
            return

        def update(graph: GraphRecord) -> GraphRecord:
            blocked_by = tuple(other for other in graph.blocked_by if other != label)
            state = graph.state
            if state in (RUNNING, BLOCKED) and not blocked_by:
                # `finished` was read before this write: another completion may have closed
                # the last open label since, and found the graph still blocked by this one.
                state = FINISHED if finished or not self.graph_table.any_open(graph_id) else RUNNING
            return replace(graph, state=state, blocked_by=blocked_by)
        # Written even unchanged when no label is open: a completion that read this one's
        # label open before may be writing `running` now, on the row as it read it.
        self._set_state(graph_id, update, touch=finished)

    def _rerun(self, graph_id: str, label: str, task_id: str, run_id: int) -> bool:
        """Answer the failure of run `run_id` with a rerun while reruns last; False if none left.

        The label row records which run was answered, so a repeated event reruns once."""
        def count(record: LabelRecord) -> LabelRecord:
            if record.rerun_of_run >= run_id or record.reruns_left <= 0:
                return record  # answered already, or no rerun left
            return replace(record, reruns_left=record.reruns_left - 1, rerun_of_run=run_id)
        answered = change_until_saved(lambda: self.graph_table.load_label(graph_id, label, task_id), count, self.graph_table.save_label)
        if answered.rerun_of_run < run_id:
            return False
        now = utcnow()

        def rerun(status):
            if status.latest is None or status.latest.run_id != run_id:
                return status  # already rerun (this is a repeated event)
            return lifecycle.rerun(status, now)
        try:
            self.updater.apply(task_id, rerun, f"rerun (graph {graph_id}, {label})")
        except Conflict as refused:
            log.warning("task %s of graph %s not rerun: %s", task_id, graph_id, refused.message)
            return False
        return True

    def _set_state(self, graph_id: str, change, touch: bool = False) -> None:
        if change_until_saved(lambda: self.graph_table.load_graph(graph_id), change, self.graph_table.save_graph,
                              touch=touch) is None:
            raise NotFound(f"Task graph {graph_id} not found")

    def _existing(self, graph_id: str) -> GraphRecord:
        graph = self.graph_table.load_graph(graph_id)
        if graph is None:
            raise NotFound(f"Task graph {graph_id} not found")
        return graph


def _as_now(graph: GraphRecord, records: dict[str, TaskRecord | None]) -> GraphRecord:
    """The graph as it is now, given its blockers' tasks by label: a blocker that was rerun
    by hand (rerunTask knows nothing of graphs) no longer blocks it, though the graph's row
    says so until the rerun resolves."""
    if graph.state != BLOCKED:
        return graph
    still = tuple(label for label in graph.blocked_by if records.get(label) is None
                  or records[label].status.state in (TaskState.FAILED, TaskState.EXCEPTION))
    return replace(graph, blocked_by=still, state=BLOCKED if still else RUNNING)


def _definitions(nodes: list[Node], now: datetime) -> dict[str, dict]:
    """Each node's task, validated and normalized; errors name the label."""
    definitions = {}
    for node in nodes:
        where = f"tasks.{node.label}.task"
        validate("create-task-request", node.task, where)
        try:
            definitions[node.task_id] = task_definition.normalize(node.task_id, node.task, now)
        except InvalidInput as error:   # of its kind: a rule between fields is an InputError
            raise type(error)(f"{where}.{error.message}") from None
    return definitions
