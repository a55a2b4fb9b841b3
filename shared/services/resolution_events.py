"""'Task resolved' events, sent so that no resolution is ever lost.

Every change that resolves a task sends two messages for the same (taskId, runId):
- before the task row is written, a *delayed* one on the `repairs` queue: if the process
  dies after the write, this message still arrives (storage queues deliver at least once)
  and the repair sweep finishes the work;
- after the write, an immediate one on the `task-resolved` queue for the dependency
  resolver.
Whoever finishes the work marks the task row, so the other message costs one read.
"""

from __future__ import annotations

from datetime import timedelta

from ..storage.message_queue import MessageQueue

RESOLVED_QUEUE = "task-resolved"
REPAIR_QUEUE = "repairs"
REPAIR_DELAY = timedelta(seconds=60)


class ResolutionEvents:
    def __init__(self, resolved: MessageQueue, repairs: MessageQueue, repair_delay: timedelta = REPAIR_DELAY) -> None:
        self.resolved = resolved
        self.repairs = repairs
        self.repair_delay = repair_delay

    def intend(self, task_id: str, run_id: int) -> None:
        self.repairs.send({"kind": "task-resolved", "taskId": task_id, "runId": run_id}, self.repair_delay)

    def announce(self, task_id: str, run_id: int) -> None:
        self.resolved.send({"taskId": task_id, "runId": run_id})

    def intend_graph_check(self, graph_id: str, parts_left: int) -> None:
        """A new graph with `parts_left` parts to create: look again later, in case the
        messages of its parts went down with a process."""
        self.repairs.send({"kind": "graph-parts", "taskGraphId": graph_id, "partsLeft": parts_left},
                          self.repair_delay)

    def intend_readiness_check(self, task_id: str) -> None:
        """A new task with dependencies: check it again later in case its creator died."""
        self.repairs.send({"kind": "check-ready", "taskId": task_id}, self.repair_delay)
