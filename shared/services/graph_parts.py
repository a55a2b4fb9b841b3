"""A new task graph's tasks, created part by part by queue-triggered functions, so that a
graph of thousands of tasks is accepted in seconds.

The PUT checks the whole graph (nothing is written if it is refused), stores it as parts
of at most PART_TASKS tasks, inserts the graph row (state `creating`) and sends a message
per part; each message creates its part's tasks. Every task of a graph is created
*unscheduled*, waiting for its requirements, so no task of the graph can run, let alone
resolve, before every task exists (a resolution can then never miss a dependent that is
not written yet). A part's row is deleted once its tasks exist; whoever deletes the last
one starts the graph: its roots are scheduled and its state becomes `running`.

Handling a part twice, or two parts at once, changes nothing: tasks are inserted or found
equal, every other row is an upsert, scheduling is idempotent, and the state changes by a
conditional write. A part whose handler dies is delivered again; parts that make no
progress (their messages lost, or held by a dead process) are sent again by the repair
sweep, which looks at a graph being created every repair delay.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

from ..domain.task_graph import CREATING, FINISHED, RUNNING, Node
from ..domain.timestamps import utcnow
from ..storage.message_queue import MessageQueue
from ..storage.task_graph_table import LabelRecord, TaskGraphTable
from .conditional import change_until_saved
from .dependencies import Dependencies
from .resolution_events import ResolutionEvents
from .task_creation import TaskCreation

log = logging.getLogger("queue.task-graphs")
PART_TASKS = 100          # tasks per part: one queue message's work, about a second of it
PART_CHARS = 420_000      # JSON per part: 2 bytes a character keeps its row under storage's 1 MiB
INLINE_TASKS = PART_TASKS # a graph of one part is created before the PUT answers
_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="graph-start")


class GraphParts:
    def __init__(self, graphs: TaskGraphTable, creation: TaskCreation, dependencies: Dependencies,
                 events: ResolutionEvents, messages: MessageQueue, safety_delay: timedelta) -> None:
        self.dependencies = dependencies
        self.events = events
        self.graphs = graphs
        self.creation = creation
        self.messages = messages
        self.safety_delay = safety_delay

    def store(self, graph_id: str, nodes: list[Node], definitions: dict[str, dict]) -> None:
        """Keep the checked graph as parts, before its graph row makes it exist. A part is
        a run of the tasks in taskId order, so that its rows of the graph, the group and the
        dependencies fall in few buckets (see `buckets`): a transaction each."""
        self.graphs.add_parts(graph_id, _split([{
            "label": node.label, "taskId": node.task_id, "requires": list(node.required_ids),
            "reruns": node.reruns, "definition": definitions[node.task_id]}
            for node in sorted(nodes, key=lambda node: node.task_id)]))

    def dispatch(self, graph_id: str, inline: bool) -> None:
        """Have the parts still stored created: by the queue trigger, or (`inline`, a small
        graph) here and now, with a delayed message each in case this process dies."""
        numbers = self.graphs.parts(graph_id)
        self._send(graph_id, numbers, self.safety_delay if inline else timedelta(0))
        self.events.intend_graph_check(graph_id, len(numbers))
        if inline:
            for number in numbers:
                self.create_part(graph_id, number)

    def check(self, graph_id: str, parts_left: int, stalls: int = 0) -> bool:
        """The repair sweep's look at a graph being created, which had `parts_left` parts
        to create when the look was planned. If none was created since, their messages were
        lost or are held by a process that died (for minutes: a queue's hold on a message):
        send them again, and look again later each time the graph stalls again (`stalls`
        looks in a row did). True if it sent them."""
        numbers = self.graphs.parts(graph_id)
        if not numbers:
            self._start_if_complete(graph_id)  # the last part's handler may have died before
            return False
        stalled = len(numbers) >= parts_left
        if stalled:
            log.warning("task graph %s: %d parts made no progress; sent again", graph_id, len(numbers),
                        extra={"taskGraphId": graph_id})
            self._send(graph_id, numbers, timedelta(0))
        self.events.intend_graph_check(graph_id, len(numbers), stalls + 1 if stalled else 0)
        return stalled

    def _send(self, graph_id: str, numbers: list[int], delay: timedelta) -> None:
        for number in numbers:
            self.messages.send({"taskGraphId": graph_id, "part": number}, delay)

    def create_part(self, graph_id: str, number: int) -> None:
        """Create the tasks of one part (the queue trigger's work), then start the graph if
        that was the last part."""
        nodes = self.graphs.load_part(graph_id, number)
        if nodes is not None:
            definitions = {node["taskId"]: node["definition"] for node in nodes}
            plan = self.creation.prepare(definitions, unused_ids=True, held=True)
            # Labels before tasks: a task's resolution looks up its label.
            self.graphs.add_labels([LabelRecord(graph_id, node["label"], node["taskId"], tuple(node["requires"]),
                                                node["reruns"], node["reruns"]) for node in nodes])
            self.creation.carry_out(plan, utcnow())
            self.graphs.remove_part(graph_id, number)
            log.info("task graph %s: part %d created (%d tasks)", graph_id, number, len(nodes),
                     extra={"taskGraphId": graph_id})
        self._start_if_complete(graph_id)

    def _start_if_complete(self, graph_id: str) -> None:
        if self.graphs.any_part(graph_id):
            return
        graph = self.graphs.load_graph(graph_id)
        if graph is None or graph.state != CREATING:
            return
        roots = [label.task_id for label in self.graphs.labels(graph_id) if not label.required_ids]
        list(_POOL.map(lambda task_id: self.dependencies.schedule(task_id, "graph started"), roots))
        # The roots may have completed already, every label with them: then it is finished.
        change_until_saved(lambda: self.graphs.load_graph(graph_id),
                           lambda g: replace(g, state=RUNNING if self.graphs.any_open(graph_id) else FINISHED)
                           if g.state == CREATING else g,
                           self.graphs.save_graph)
        log.info("task graph %s started: %d root tasks scheduled", graph_id, len(roots),
                 extra={"taskGraphId": graph_id})


def _split(nodes: list[dict]) -> list[list[dict]]:
    """Parts of at most PART_TASKS nodes and about PART_CHARS characters of JSON."""
    parts, current, size = [], [], 0
    for node in nodes:
        length = len(json.dumps(node, separators=(",", ":")))
        if current and (len(current) == PART_TASKS or size + length > PART_CHARS):
            parts.append(current)
            current, size = [], 0
        current.append(node)
        size += length
    return parts + [current] if current else parts
