"""A task group read whole (all pages of listTaskGroup) and watched until nothing more will run."""

from __future__ import annotations

import time
from dataclasses import dataclass

import taskcluster

from taskq.states import RESOLVED, counts_by_state

PAGE = 1000
GRAPH_ENDED = ("finished", "blocked")


@dataclass(frozen=True)
class Blocker:
    """A task that did not complete and keeps others of its group from ever running."""
    task_id: str
    name: str                  # its label in a graph, else its metadata.name
    state: str


@dataclass(frozen=True)
class GroupSnapshot:
    task_group_id: str
    tasks: list[dict]          # listTaskGroup's entries: {task, status}
    graph_state: str | None    # the scheduler's state when the group is a task graph
    blockers: tuple[Blocker, ...] = ()
    cannot_run: int = 0        # tasks the blockers keep from running

    @property
    def counts(self) -> dict[str, int]:
        return counts_by_state(entry["status"]["state"] for entry in self.tasks)

    @property
    def idle(self) -> bool:
        """Nothing pending or running: only a resolution could change anything now."""
        counts = self.counts
        return bool(self.tasks) and counts["pending"] == 0 and counts["running"] == 0

    @property
    def all_completed(self) -> bool:
        return bool(self.tasks) and all(entry["status"]["state"] == "completed" for entry in self.tasks)

    def as_json(self) -> dict:
        return {"taskGroupId": self.task_group_id, "graphState": self.graph_state, "counts": self.counts,
                "total": len(self.tasks),
                "resolved": sum(1 for entry in self.tasks if entry["status"]["state"] in RESOLVED),
                "blockedBy": [{"taskId": b.task_id, "name": b.name, "state": b.state} for b in self.blockers],
                "cannotRun": self.cannot_run}

    def blockage(self) -> str:
        """`blocked by lint (<taskId>, failed); 3 tasks cannot run`, or '' when nothing blocks."""
        if not self.blockers:
            return ""
        named = ", ".join(f"{b.name} ({b.task_id}, {b.state})" for b in self.blockers[:5])
        more = f" and {len(self.blockers) - 5} more" if len(self.blockers) > 5 else ""
        return f"blocked by {named}{more}; {self.cannot_run} task(s) cannot run"


def list_group(queue: taskcluster.Queue, task_group_id: str) -> list[dict]:
    tasks, token = [], None
    while True:
        query = {"limit": PAGE, **({"continuationToken": token} if token else {})}
        page = queue.listTaskGroup(task_group_id, query=query)
        tasks += page["tasks"]
        token = page.get("continuationToken")
        if not token:
            return tasks


def graph_state(scheduler, task_group_id: str) -> str | None:
    """The task graph's state, or None when the group is not a graph (or has no scheduler)."""
    if scheduler is None:
        return None
    try:
        return scheduler.getTaskGraphStatus(task_group_id)["status"]["state"]
    except taskcluster.exceptions.TaskclusterRestFailure as failure:
        if failure.status_code == 404:
            return None
        raise


def snapshot(queue, scheduler, task_group_id: str) -> GroupSnapshot:
    tasks, state = list_group(queue, task_group_id), graph_state(scheduler, task_group_id)
    if state == "blocked":   # the scheduler knows (reruns left, labels): ask it, once blocked
        inspected = scheduler.inspectTaskGraph(task_group_id)
        by_label = {node["label"]: node for node in inspected["tasks"]}
        blockers = tuple(Blocker(by_label[label]["taskId"], label, by_label[label]["state"])
                         for label in inspected["blockedBy"])
        return GroupSnapshot(task_group_id, tasks, state, blockers, len(inspected["unreachable"]))
    if state is None:
        return GroupSnapshot(task_group_id, tasks, None, *blocked_by(tasks))
    return GroupSnapshot(task_group_id, tasks, state)


def blocked_by(tasks: list[dict]) -> tuple[tuple[Blocker, ...], int]:
    """In a plain group: the tasks that failed (or ended in exception) with unscheduled
    dependents that require all to complete, and how many tasks can no longer run behind
    them (the rule the browser view draws by: group-model.js)."""
    entries = {entry["status"]["taskId"]: entry for entry in tasks}
    dependents: dict[str, list[str]] = {}
    for task_id, entry in entries.items():
        for dependency in entry["task"].get("dependencies", []):
            dependents.setdefault(dependency, []).append(task_id)
    waiting = lambda task_id: entries[task_id]["status"]["state"] == "unscheduled"  # noqa: E731
    blockers, stuck = [], set()
    for task_id, entry in entries.items():
        if entry["status"]["state"] not in ("failed", "exception"):
            continue
        held = [child for child in dependents.get(task_id, []) if waiting(child)
                and entries[child]["task"].get("requires", "all-completed") == "all-completed"]
        if held:
            blockers.append(Blocker(task_id, entry["task"]["metadata"]["name"], entry["status"]["state"]))
            stuck.update(held)
    frontier = list(stuck)
    while frontier:
        for child in dependents.get(frontier.pop(), []):
            if waiting(child) and child not in stuck:
                stuck.add(child)
                frontier.append(child)
    return tuple(sorted(blockers, key=lambda b: b.name)), len(stuck)


def ended(previous: GroupSnapshot | None, current: GroupSnapshot) -> bool:
    """A graph ends when the scheduler says so; a plain group when two reads in a row find
    nothing pending or running (a dependent is scheduled within the call that resolves its
    last dependency, so one read between two calls cannot miss it twice)."""
    if current.graph_state is not None:
        return current.graph_state in GRAPH_ENDED
    return current.idle and previous is not None and previous.idle


def watch(queue, scheduler, task_group_id: str, on_change, interval: float = 1.0,
          timeout: float | None = None) -> GroupSnapshot:
    """Read the group until it ends, calling `on_change(snapshot)` after each read. Reads of a
    large group take time; the pause between them grows with it, so watching stays cheap."""
    give_up = None if timeout is None else time.monotonic() + timeout
    previous = None
    while True:
        started = time.monotonic()
        current = snapshot(queue, scheduler, task_group_id)
        on_change(current)
        if ended(previous, current) or (give_up is not None and time.monotonic() > give_up):
            return current
        previous = current
        time.sleep(max(interval, 2 * (time.monotonic() - started)))
