"""Task graphs (seed 000): tasks named by label, `requires` between labels, `reruns`, and
`{"$subs": "taskId:<label>"}` placeholders. Plain rules; storage lives elsewhere.

States of a graph:
- creating: accepted; its tasks are being created, and none runs until all exist;
- running: some task has not completed and nothing is blocked;
- blocked: a task failed with no reruns left, so its dependents can never run;
- finished: every task completed.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass

from shared.domain.errors import InvalidInput
from shared.domain.ids import slugid_from_digest

CREATING, RUNNING, BLOCKED, FINISHED = "creating", "running", "blocked", "finished"
SCHEDULER_ID = "task-graph-scheduler"


@dataclass(frozen=True)
class Node:
    label: str
    task_id: str
    requires: tuple[str, ...]
    reruns: int
    task: dict      # the definition with placeholders replaced and graph fields set
    required_ids: tuple[str, ...] = ()   # the taskIds of `requires`, in the same order


def task_id_for(graph_id: str, label: str) -> str:
    """A slugid fixed by (graph, label), so a retried graph creation names the same tasks.

    The hash is shaped into a version-4 UUID (as slugids are), first bit clear."""
    return slugid_from_digest(hashlib.sha256(f"{graph_id}/{label}".encode()).digest())


def build_nodes(graph_id: str, tasks: dict, known: dict[str, str], routing: str = "",
                reused: dict[str, str] | None = None) -> list[Node]:
    """Nodes for the graph's new `tasks` (label -> {requires, reruns, task}), in an order where
    each comes after what it requires. `known` maps labels already in the graph to taskIds.
    `reused` maps labels of `tasks` that reuse a completed task (see `reuse_namespaces`) to
    its taskId: they get no node, and their dependents depend on that task, which does not
    count among their `required_ids` (it completed: nothing of the graph waits on it)."""
    clash = sorted(set(tasks) & set(known))
    if clash:
        raise InvalidInput(f"tasks: labels already in the graph: {', '.join(clash)}")
    reused = reused or {}
    ids = {**known, **{label: task_id_for(graph_id, label) for label in tasks}, **reused}
    for label, node in tasks.items():
        unknown = [required for required in node.get("requires", []) if required not in ids]
        if unknown:
            raise InvalidInput(f"tasks.{label}.requires: unknown labels {', '.join(unknown)}")
    created = {label: node for label, node in tasks.items() if label not in reused}
    order = _topological(created)
    done = set(reused.values())
    return [_node(graph_id, label, created[label], ids, routing, done) for label in order]


def reuse_namespaces(node: dict) -> list[str]:
    """The index namespaces a label may reuse a completed task from, in order (`reuse.index`:
    one, or a list); none when it names none."""
    wanted = (node.get("reuse") or {}).get("index") or []
    return [wanted] if isinstance(wanted, str) else list(wanted)


def _topological(tasks: dict) -> list[str]:
    waiting = {label: {r for r in node.get("requires", []) if r in tasks} for label, node in tasks.items()}
    dependents: dict[str, list[str]] = {label: [] for label in tasks}
    for label, required in waiting.items():
        for other in required:
            dependents[other].append(label)
    ready = deque(sorted(label for label, required in waiting.items() if not required))
    order = []
    while ready:
        label = ready.popleft()
        order.append(label)
        for dependent in dependents[label]:
            waiting[dependent].discard(label)
            if not waiting[dependent]:
                ready.append(dependent)
    if len(order) < len(tasks):
        cycle = sorted(set(tasks) - set(order))
        raise InvalidInput(f"tasks: the requires of these labels form a cycle: {', '.join(cycle[:50])}")
    return order


def _node(graph_id: str, label: str, node: dict, ids: dict[str, str], routing: str, done: set[str]) -> Node:
    task = substitute(node["task"], ids, f"tasks.{label}.task")
    requires = tuple(node.get("requires", []))
    task["taskGroupId"] = graph_id
    task["schedulerId"] = SCHEDULER_ID
    task["dependencies"] = sorted(set(task.get("dependencies", [])) | {ids[r] for r in requires})
    if routing:
        task["routes"] = sorted(set(task.get("routes", [])) | {routing})
    required = tuple(r for r in requires if ids[r] not in done)
    return Node(label, ids[label], required, node.get("reruns", 0), task, tuple(ids[r] for r in required))


def substitute(value, ids: dict[str, str], path: str):
    """Replace every `{"$subs": "taskId:<label>"}` in `value` with that label's taskId."""
    if isinstance(value, dict):
        if set(value) == {"$subs"}:
            reference = value["$subs"]
            label = reference[len("taskId:"):] if isinstance(reference, str) and reference.startswith("taskId:") else None
            if label not in ids:
                raise InvalidInput(f"{path}: $subs {reference!r} does not name a label of the graph")
            return ids[label]
        return {key: substitute(item, ids, f"{path}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, ids, f"{path}[{index}]") for index, item in enumerate(value)]
    return value


def fingerprint(request: dict) -> str:
    """Identifies a graph request, so a repeated creation can be told from a different one."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def unreachable(requires: dict[str, tuple[str, ...]], blocked: set[str]) -> set[str]:
    """Labels that can never run because they (transitively) require a blocked label."""
    dependents: dict[str, list[str]] = {}
    for label, required in requires.items():
        for other in required:
            dependents.setdefault(other, []).append(label)
    found, frontier = set(), deque(blocked)
    while frontier:
        for dependent in dependents.get(frontier.popleft(), []):
            if dependent not in found:
                found.add(dependent)
                frontier.append(dependent)
    return found
