"""The repair sweep (seed 003, "what could go wrong"): finish work a crashed process left.

It reads only what is due: the delayed intents written before each risky step (see
`resolution_messages`). For each one it checks the invariant and repairs what is broken:
- a resolution whose event was never processed: process it now;
- an unscheduled task whose dependencies are all satisfied: schedule it;
- a new graph whose parts made no progress: send them again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from shared.storage.client.message_queue import MessageQueue, ReceivedMessage
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.scheduler.graph_parts import GraphParts
from shared.services.dependencies.dependency_resolver import DependencyResolver

log = logging.getLogger("queue.repairs")
BATCH = 32
# How long a received intent stays hidden from other sweeps. A sweep settles an intent in
# milliseconds, but one that dies holding a batch leaves it hidden this long, and the graph
# check that re-sends a new graph's lost parts is such an intent: with 5 minutes, a host
# killed at the wrong moment stalled a graph's creation for 5 minutes (the SIGKILL suite).
# Settling an intent twice is harmless (each is idempotent).
HOLD = timedelta(minutes=1)
MAX_ATTEMPTS = 5   # as the host's maxDequeueCount for queue triggers


class Repairs:
    def __init__(self, intents: MessageQueue, poison: MessageQueue, dependency_resolver: DependencyResolver,
                 dependency_tracker: DependencyTracker, graph_parts: GraphParts) -> None:
        self.graph_parts = graph_parts
        self.intents = intents
        self.poison = poison
        self.dependency_resolver = dependency_resolver
        self.dependency_tracker = dependency_tracker

    def sweep(self, max_batches: int = 10, hold: timedelta = HOLD) -> int:
        """Check every due intent (up to `max_batches` batches); returns how many were repaired.

        One intent that fails stays for a later sweep (it is visible again after `hold`)
        without holding up the others; one that failed MAX_ATTEMPTS times is moved to the
        poison queue, as the Functions host does with a queue trigger's messages."""
        repaired = 0
        for _ in range(max_batches):
            messages = self.intents.receive(BATCH, hold)
            for message in messages:
                repaired += self._settle(message)
            if len(messages) < BATCH:
                break
        return repaired

    def _settle(self, message: ReceivedMessage) -> int:
        try:
            repaired = self._check(message.body)
        except Exception:
            if message.dequeue_count < MAX_ATTEMPTS and isinstance(message.body, dict):
                log.warning("repair intent %s failed (attempt %d); it is tried again later", message.body,
                            message.dequeue_count, exc_info=True)
                return 0
            log.exception("repair intent %r failed %d times: moved to %s", message.body, message.dequeue_count,
                          self.poison.name)
            self.poison.send({"intent": message.body})
            repaired = 0
        self.intents.delete(message)
        return repaired

    def _check(self, intent: dict) -> int:
        if intent["kind"] == "graph-parts":
            return int(self.graph_parts.check(intent["taskGraphId"], int(intent["partsLeft"]),
                                              int(intent.get("stalls", 0))))
        if intent["kind"] == "tasks-resolved":
            return self._unclaimed_resolutions(intent["taskIds"])
        task_id = intent["taskId"]
        if intent["kind"] == "task-resolved" and self.dependency_resolver.handle(task_id, int(intent["runId"])):
            log.warning("repaired: resolution of task %s run %s had not been processed", task_id,
                        intent["runId"], extra={"taskId": task_id, "repair": "task-resolved"})
            return 1
        if intent["kind"] == "check-ready" and self.dependency_tracker.schedule_if_ready(task_id):
            log.warning("repaired: task %s had all dependencies satisfied but was unscheduled", task_id,
                        extra={"taskId": task_id, "repair": "check-ready"})
            return 1
        return 0

    def _unclaimed_resolutions(self, task_ids: list[str]) -> int:
        """A `SharedIntent` left: each named task's last resolution by a run nobody claimed is
        followed up again (done already, it changes nothing)."""
        followed = sum(map(self.dependency_resolver.handle_unclaimed, task_ids))
        if followed:
            log.warning("repaired: the resolutions of %d of %d tasks named by one intent followed up again "
                        "(their first follow-up had not finished)", followed, len(task_ids),
                        extra={"repair": "tasks-resolved"})
        return followed
