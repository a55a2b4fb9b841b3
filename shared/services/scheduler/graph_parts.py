"""A new task graph's tasks, or an extension's, created part by part by queue-triggered
functions, so that a graph or an extension of thousands of tasks is accepted in seconds.

The PUT (or the extension) checks all its tasks (nothing is written if it is refused),
stores them as parts of at most PART_TASKS tasks, sets the graph's state to `creating` and
sends a message per part; each message creates its part's tasks. A part's row is deleted
once its tasks exist; whoever deletes the last one ends the creation: the graph becomes
`running` (or `finished`, if everything it holds has completed meanwhile).

A new graph's tasks are all created *unscheduled*, waiting for their requirements, so no
task of the graph can run, let alone resolve, before every task exists (a resolution can
then never miss a dependent not written yet); the creation's end schedules its roots.

An extension's tasks may require tasks that ran long ago, and usually most of them can run
at once, so they are created as createTask creates tasks: ready ones scheduled, the others
waiting on what they require, found as it is now. Within the extension, dependents come
first, as in one createTaskGraph's batch (see `insertion_waves`): the parts come in
*stages*, a part's tasks required only by tasks of its own part or of parts of earlier
stages, and a stage's parts are sent once every earlier stage's are created (a chain of 500
is five stages, not 500). So a task's requirements of its own extension do not exist yet when
it is created: they cannot have resolved, and will be created listing it (the part knows
which they are, `unborn`). Nothing of them is read; a fan-in of the extension's 10,000
children read each child first when they came before it (a storage request each, most of
what its creation cost).

One handler at a time creates a part: it marks the part begun (a conditional write), and a
handler that finds it begun less than a lease ago leaves it alone, so a duplicate message
never writes a task's rows again once the task may have run. Only the handler whose mark
is on the part deletes it. A handler that dies leaves its mark: a lease later its part is
taken over, reading which of its tasks exist (an extension's may be running already; their
rows are not written again). Parts that make no progress (their messages lost, or held by a
dead process) are sent again by the repair sweep, which looks at a graph being created
every repair delay. Tasks are inserted or found equal, scheduling is idempotent, and the
graph's state changes by a conditional write.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import timedelta

from shared.runtime.thread_pools import GRAPH_STARTS
from shared.domain.dependencies import Dependent, Listing, dependencies_of
from shared.domain.task_graph import CREATING, FINISHED, RUNNING, Node
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.errors import ChangedSinceRead
from shared.storage.client.message_queue import MessageQueue
from shared.storage.tables.task_graph_table import EXTENDED, GraphRecord, LabelRecord, Part, TaskGraphTable, part_stage
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.dependencies.resolution_messages import ResolutionMessages
from shared.services.tasks.task_creation import TaskCreation

log = logging.getLogger("queue.task-graphs")
PART_TASKS = 100          # tasks per part: one queue message's work, about a second of it
PART_CHARS = 420_000      # JSON per part: 2 bytes a character keeps its row under storage's 1 MiB
INLINE_TASKS = PART_TASKS # a graph of one part is created before the PUT answers
LEASE_DELAYS = 5          # repair delays (and at least LEASE_FLOOR) after which a part's
LEASE_FLOOR = timedelta(seconds=30)   # creation is presumed dead (see `_begin`)


class GraphParts:
    def __init__(self, graph_table: TaskGraphTable, creation: TaskCreation, dependency_tracker: DependencyTracker,
                 messages: ResolutionMessages, part_queue: MessageQueue, safety_delay: timedelta) -> None:
        self.dependency_tracker = dependency_tracker
        self.messages = messages
        self.graph_table = graph_table
        self.creation = creation
        self.part_queue = part_queue
        self.safety_delay = safety_delay
        self.lease = max(safety_delay * LEASE_DELAYS, LEASE_FLOOR)

    def store(self, graph_id: str, nodes: list[Node], definitions: dict[str, dict], extension: str = "",
              reused: frozenset[str] = frozenset()) -> None:
        """Keep the checked graph (or the `extension` with this fingerprint) as parts, before
        anything makes it exist. A new graph's part is a run of its tasks in taskId order, so
        that its rows of the graph, the group and the dependencies fall in few buckets (see
        `buckets`): a transaction each. An extension's tasks are in that order within each
        of its waves, the last wave first (each task before what it requires), and its parts
        are staged. A node keeps which of its dependencies are `reused` completed tasks
        (nothing waits on them), and an extension's which are tasks of the extension."""
        listing = Listing.of({node.task_id: definitions[node.task_id] for node in nodes})
        entries = {node.task_id: _entry(node, definitions, listing, reused, bool(extension)) for node in nodes}
        if not extension:
            parts = [(0, part) for part in _split([entries[task_id] for task_id in sorted(entries)])]
        else:
            wave = _waves(nodes)
            parts = _staged(_split([entries[task_id] for task_id in sorted(entries, key=lambda t: (-wave[t], t))]))
        self.graph_table.add_parts(graph_id, parts, extension)

    def dispatch(self, graph_id: str, inline: bool) -> None:
        """Have the parts still stored created: by the queue trigger, or (`inline`, a small
        graph) here and now, with a delayed message each in case this process dies."""
        keys = self.graph_table.parts(graph_id)
        first = _first_stage(keys)
        self._send(graph_id, first, self.safety_delay if inline else timedelta(0))
        self.messages.intend_graph_check(graph_id, len(keys))
        for key in first if inline else []:
            self.create_part(graph_id, key)
        if not keys:
            self._end_creation(graph_id)   # a resumed creation whose last handler died before

    def check(self, graph_id: str, parts_left: int, stalls: int = 0) -> bool:
        """The repair sweep's look at a graph being created, which had `parts_left` parts
        to create when the look was planned. A part begun a lease ago and not created went
        down with its handler: it is sent again, to be taken over. If no part was created
        since the last look and none is being created (begun within a lease), the messages
        of the parts not begun were lost or are held by a process that died (for minutes: a
        queue's hold on a message): the earliest stage's are sent again, and the graph is
        looked at again later each time it stalls again (`stalls` looks in a row did). While
        handlers are at work, the parts waiting are behind them in the queue. True if it
        sent any."""
        marks = self.graph_table.part_marks(graph_id)
        if not marks:
            self._end_creation(graph_id)  # the last part's handler may have died before
            return False
        now = utcnow()
        begun = {key: parse_iso(mark) for key, mark in marks if mark}
        lost = [key for key, when in begun.items() if when <= now - self.lease]
        stalled = len(marks) >= parts_left and len(lost) == len(begun)
        if stalled:
            lost += [key for key in _first_stage([key for key, _ in marks]) if key not in begun]
        if lost:
            log.warning("task graph %s: %d parts made no progress; sent again", graph_id, len(lost),
                        extra={"taskGraphId": graph_id})
            self._send(graph_id, lost, timedelta(0))
        self.messages.intend_graph_check(graph_id, len(marks), stalls + 1 if stalled else 0)
        return bool(lost)

    def _send(self, graph_id: str, keys: list[str], delay: timedelta) -> None:
        for key in keys:
            self.part_queue.send({"taskGraphId": graph_id, "part": key}, delay)

    def create_part(self, graph_id: str, key: str) -> None:
        """Create the tasks of one part (the queue trigger's work), unless another handler is
        at it; then send the next stage if that was its stage's last part, or end the
        creation if it was the last part."""
        part = self.graph_table.load_part(graph_id, key)
        if part is None:
            if not self.graph_table.any_part(graph_id):
                self._end_creation(graph_id)   # the last part's handler may have died before
            return
        taken_over = bool(part.begun)
        part = self._begin(graph_id, part)
        if part is None:
            return
        plan = self._plan(part, taken_over)
        # Labels before tasks: a task's resolution looks up its label. A task that exists
        # has its label already; writing it again would reopen a completed one.
        self.graph_table.add_labels([LabelRecord(graph_id, node["label"], node["taskId"], tuple(_required_ids(node)),
                                            node["reruns"], node["reruns"])
                                for node in part.nodes if node["taskId"] not in plan.existing])
        self.creation.carry_out(plan, utcnow())
        try:
            self.graph_table.remove_part(part, graph_id)
        except ChangedSinceRead:
            log.warning("task graph %s: part %s was taken over while it was created", graph_id, key,
                        extra={"taskGraphId": graph_id})
            return
        log.info("task graph %s: part %s created (%d tasks)", graph_id, key, len(part.nodes),
                 extra={"taskGraphId": graph_id})
        keys = self.graph_table.parts(graph_id)
        if not keys:
            self._end_creation(graph_id)
        elif part_stage(keys[0]) > part.stage:
            self._send(graph_id, _first_stage(keys), timedelta(0))

    def _begin(self, graph_id: str, part: Part) -> Part | None:
        """The part marked begun by this handler, or None if another handler is at it: one
        began it less than a lease ago, or began it (or took it over) since it was read.

        Only one handler writes a part's rows at a time, and only that one may delete the
        part (conditional on its mark): a duplicate message (the repair sweep's, another
        stage's last part's) must not write a label, group or requirement row again after
        the graph started (a completed task's label would be open again, the graph running
        for good). A handler that dies leaves its mark; a lease later the part is taken
        over. The lease must outlast a live handler's writes before its tasks' inserts (an
        insert of a task that exists is harmless): five repair delays, five minutes in
        Azure (the Functions timeout), and never under LEASE_FLOOR.
        """
        now = utcnow()
        if part.begun and parse_iso(part.begun) > now - self.lease:
            log.info("task graph %s: part %s is being created by another handler", graph_id, part.key,
                     extra={"taskGraphId": graph_id})
            return None
        try:
            return self.graph_table.begin_part(part, graph_id, to_iso(now))
        except ChangedSinceRead:
            return None

    def _plan(self, part: Part, taken_over: bool):
        """A new graph's tasks are created held (nothing runs before the graph starts, so a
        part taken over writes them all again). An extension's run as they are created: one
        taken over reads which of its tasks exist (they may be running), else none exists;
        what they require of later stages does not exist yet (the next stage is sent once
        this part is created, and a part is taken over only in its own stage)."""
        definitions = {node["taskId"]: node["definition"] for node in part.nodes}
        listing = _listing_of(part.nodes)
        if not part.extension:
            satisfied = frozenset(task_id for node in part.nodes for task_id in node.get("reused", ()))
            return self.creation.prepare(definitions, unused_ids=True, held=True, listing=listing, satisfied=satisfied)
        return self.creation.prepare(definitions, unused_ids=not taken_over, accepted=True, listing=listing,
                                     unborn=_unborn(part.nodes))

    def _end_creation(self, graph_id: str) -> None:
        """No part is left (every caller has just found so): a new graph starts (its roots
        scheduled), an extension is marked done; the graph leaves `creating` for `running`, or
        `finished` if every task it holds has completed already."""
        graph = self.graph_table.load_graph(graph_id)
        if graph is None or (graph.state != CREATING and not graph.extension):
            return
        if graph.extension:
            self.graph_table.mark_extension(graph_id, graph.extension, EXTENDED)
            roots = []
        else:
            roots = [label.task_id for label in self.graph_table.labels(graph_id) if not label.required_ids]
            list(GRAPH_STARTS.map(lambda task_id: self.dependency_tracker.schedule(task_id, "graph started"), roots))

        def created(g: GraphRecord) -> GraphRecord:
            if g.state != CREATING and not g.extension:
                return g
            # The roots may have completed already, every label with them: then it is finished.
            state = (RUNNING if self.graph_table.any_open(graph_id) else FINISHED) if g.state == CREATING else g.state
            return replace(g, state=state, extension="")
        change_until_saved(lambda: self.graph_table.load_graph(graph_id), created, self.graph_table.save_graph)
        log.info("task graph %s: every task created (%s)", graph_id,
                 f"extension {graph.extension}" if graph.extension else f"{len(roots)} root tasks scheduled",
                 extra={"taskGraphId": graph_id})


def _entry(node: Node, definitions: dict[str, dict], listing: Listing, reused: frozenset[str],
           extension: bool) -> dict:
    """What a part keeps of a node: its label and task, the taskIds its label requires (as
    positions, see `_positions`), who waits on whom in the whole graph or extension (the
    task's listed dependents, null when the table holds them, and which of its dependencies'
    rows list it), which of its dependencies are `reused` tasks and, in an extension, which
    are tasks of the extension."""
    definition = definitions[node.task_id]
    dependencies = dependencies_of(definition)
    dependents = listing.dependents.get(node.task_id, ())
    of_extension = _bits(dependencies, definitions) if extension else ""
    return {"label": node.label, "taskId": node.task_id, "requiresAt": _positions(node.required_ids, dependencies),
            "reruns": node.reruns,
            "dependents": None if dependents is None else [dependent.to_json() for dependent in dependents],
            "listedBy": _bits(dependencies, listing.listed_by.get(node.task_id, frozenset())),
            **_reused_entry(reused, definition),
            # "*" if all are: a fan-in's 10,000 characters would take its part's row near 1 MiB
            **({"ofExtension": "*" if "0" not in of_extension else of_extension} if "1" in of_extension else {}),
            "definition": definition}


def _bits(dependencies: list[str], chosen) -> str:
    """For each dependency, in order, "1" if it is `chosen`, else "0" (a character each: a
    fan-in may wait on 10,000 tasks)."""
    return "".join("1" if required in chosen else "0" for required in dependencies)


def _chosen(dependencies: list[str], bits: str) -> frozenset[str]:
    """The dependencies whose character in `bits` is "1" ("*": all of them)."""
    return frozenset(dependencies if bits == "*" else
                     (required for required, bit in zip(dependencies, bits) if bit == "1"))


def _positions(required_ids: tuple[str, ...], dependencies: list[str]) -> list[int]:
    """The taskIds a label requires, in its order, as positions among its definition's
    dependencies (which hold them all): a fan-in's 10,000 taskIds kept twice would take a
    part's row past storage's 1 MiB beside a large definition."""
    position = {task_id: number for number, task_id in enumerate(dependencies)}
    return [position[task_id] for task_id in required_ids]


def _required_ids(node: dict) -> list[str]:
    """The taskIds a part's node requires, in its label's order (a part stored before
    positions were kept has them as they are)."""
    if "requires" in node:
        return node["requires"]
    dependencies = dependencies_of(node["definition"])
    return [dependencies[number] for number in node["requiresAt"]]


def _unborn(nodes: list[dict]) -> frozenset[str]:
    """The extension's tasks that the tasks of a part require and that are not in the part:
    in parts of later stages, not created yet."""
    own = {node["taskId"] for node in nodes}
    return frozenset().union(*(_chosen(dependencies_of(node["definition"]), node.get("ofExtension", ""))
                               for node in nodes)) - own


def _reused_entry(reused: frozenset[str], definition: dict) -> dict:
    """The task's dependencies that are reused completed tasks, if it has any."""
    found = sorted(reused.intersection(definition["dependencies"]))
    return {"reused": found} if found else {}


def _listing_of(nodes: list[dict]) -> Listing:
    """A part's share of its graph's listing, as `_entry` kept it."""
    dependents = {node["taskId"]: None if node.get("dependents") is None
                  else tuple(Dependent.from_json(value) for value in node["dependents"]) for node in nodes}
    listed_by = {node["taskId"]: _chosen(dependencies_of(node["definition"]), node.get("listedBy", ""))
                 for node in nodes}
    return Listing(dependents, listed_by)


def _first_stage(keys: list[str]) -> list[str]:
    return [key for key in keys if part_stage(key) == part_stage(keys[0])] if keys else []


def _waves(nodes: list[Node]) -> dict[str, int]:
    """taskId -> its wave among `nodes` (each after what it requires, as `build_nodes` orders
    them): 0 if it requires none of them, else one more than the latest of those it does."""
    wave: dict[str, int] = {}
    for node in nodes:
        wave[node.task_id] = 1 + max((wave[r] for r in node.required_ids if r in wave), default=-1)
    return wave


def _staged(parts: list[list[dict]]) -> list[tuple[int, list[dict]]]:
    """Each part with its stage: one after the latest stage of the other parts holding tasks
    that require its tasks (parts come in reverse wave order, so those are earlier ones)."""
    part_of = {node["taskId"]: number for number, part in enumerate(parts) for node in part}
    required_by: dict[int, set[int]] = {}
    for number, part in enumerate(parts):
        for required in (r for node in part for r in _required_ids(node) if part_of.get(r, number) != number):
            required_by.setdefault(part_of[required], set()).add(number)
    stages: list[int] = []
    for number in range(len(parts)):
        stages.append(1 + max((stages[other] for other in required_by.get(number, ())), default=-1))
    return list(zip(stages, parts))


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
