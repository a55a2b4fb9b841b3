"""Beyond Taskcluster: a graph's label may reuse a completed task found in the index instead of
creating its own (taskgraph's `index-search` optimization, as a field of the graph format):

    "toolchain": {"reuse": {"index": ["proj.cache.toolchain.<hash>", "proj.cache.latest"]}, "task": {...}}

The namespaces are tried in order; the first that holds a live entry whose task completed and
does not expire before the graph's deadline (the latest `deadline` of its tasks) gives the
label that task's id: no task is created for it, its dependents depend on that task (which
satisfies them at once), and `{"$subs": "taskId:<label>"}` stands for it. A request's decision
is kept with the graph (`TaskGraphTable.keep_reuse`) before anything is created from it, so a
creation retried after a crash builds the same tasks even if the index changed meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from shared.runtime.thread_pools import INDEX_READS
from shared.domain.errors import Conflict, InvalidInput
from shared.domain.runs import TaskState
from shared.domain.task_graph import reuse_namespaces
from shared.domain.timestamps import parse_iso, utcnow
from shared.storage.tables.index_table import IndexTable
from shared.storage.tables.task_graph_table import GraphRecord, TaskGraphTable
from shared.storage.tables.task_table import TaskTable

log = logging.getLogger("queue.task-graphs")
MAX_REUSING = 1_000   # labels of one request that may name namespaces to reuse (their decision: one row)


@dataclass(frozen=True)
class Reused:
    label: str
    task_id: str
    namespace: str


class GraphReuse:
    def __init__(self, graph_table: TaskGraphTable, index_table: IndexTable, task_table: TaskTable) -> None:
        self.graph_table = graph_table
        self.index_table = index_table
        self.task_table = task_table

    def decided(self, graph_id: str, fingerprint: str, tasks: dict) -> dict[str, tuple[str, str]]:
        """The labels of a request that reuse an indexed task (label -> (taskId, namespace)):
        as decided when it was first accepted, or found now. A request that names no
        namespace to reuse costs nothing here."""
        wanting = [label for label, node in tasks.items() if reuse_namespaces(node)]
        if not wanting:
            return {}
        if len(wanting) > MAX_REUSING:
            raise InvalidInput(f"tasks: {len(wanting)} labels name namespaces to reuse; at most {MAX_REUSING} may")
        kept = self.graph_table.reuse_decision(graph_id, fingerprint)
        if kept is not None:
            return kept
        return {label: (found.task_id, found.namespace) for label, found in self.find(tasks).items()}

    def keep(self, graph_id: str, fingerprint: str, tasks: dict, reused: dict[str, tuple[str, str]]) -> None:
        """Keep the decision before anything is created from it, so that a creation retried
        after a crash builds the same tasks, whatever the index says by then."""
        if not any(reuse_namespaces(node) for node in tasks.values()):
            return
        if self.graph_table.keep_reuse(graph_id, fingerprint, reused) != reused:
            raise Conflict(f"Task graph {graph_id} is being created or extended by the same request at this "
                           "moment, which found other tasks to reuse; send it again")
        if reused:
            log.info("task graph %s reuses %s", graph_id,
                     ", ".join(f"{label}={task_id} ({namespace})" for label, (task_id, namespace) in reused.items()),
                     extra={"taskGraphId": graph_id})

    def before(self, graph: GraphRecord, but: str = "") -> dict[str, tuple[str, str]]:
        """The labels that reused a task in the graph's creation and in the extensions applied
        to it (but the extension `but`)."""
        found = {}
        for fingerprint, reused in self.graph_table.reuse_decisions(graph.graph_id).items():
            if fingerprint == graph.fingerprint or (
                    fingerprint != but and self.graph_table.extension(graph.graph_id, fingerprint) is not None):
                found.update(reused)
        return found

    def find(self, tasks: dict) -> dict[str, Reused]:
        """The labels of `tasks` (a graph request's) that reuse an indexed task, by label."""
        wanting = {label: reuse_namespaces(node) for label, node in tasks.items() if reuse_namespaces(node)}
        if not wanting:
            return {}
        deadline = graph_deadline(tasks)
        found = INDEX_READS.map(lambda item: self._first_usable(item[0], item[1], deadline), wanting.items())
        return {reused.label: reused for reused in found if reused is not None}

    def _first_usable(self, label: str, namespaces: list[str], deadline: datetime | None) -> Reused | None:
        now = utcnow()
        for namespace in namespaces:
            entry = self.index_table.get(namespace)
            if entry is None or parse_iso(entry.expires) <= now:
                continue
            record = self.task_table.load(entry.task_id)
            if record is None or record.status.state is not TaskState.COMPLETED:
                continue
            if deadline is not None and parse_iso(record.summary["expires"]) < deadline:
                continue
            return Reused(label, entry.task_id, namespace)
        return None


def ids(reused: dict[str, tuple[str, str]]) -> dict[str, str]:
    """label -> taskId of a decision."""
    return {label: task_id for label, (task_id, _) in reused.items()}


def graph_deadline(tasks: dict) -> datetime | None:
    """The latest `deadline` of a request's tasks (None if none can be read: then the
    request is refused when its tasks are checked)."""
    deadlines = []
    for node in tasks.values():
        try:
            deadlines.append(parse_iso(node["task"]["deadline"]))
        except (KeyError, TypeError, ValueError):
            continue
    return max(deadlines, default=None)
