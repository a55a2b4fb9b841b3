"""The repair sweep (seed 003, "what could go wrong"): finish work a crashed process left.

It reads only what is due: the delayed intents written before each risky step (see
`resolution_events`). For each one it checks the invariant and repairs what is broken:
- a resolution whose event was never processed: process it now;
- an unscheduled task whose dependencies are all satisfied: schedule it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from ..storage.message_queue import MessageQueue
from .dependencies import Dependencies
from .resolution_handler import ResolutionHandler

log = logging.getLogger("queue.repairs")
BATCH = 32
HOLD = timedelta(minutes=5)


class Repairs:
    def __init__(self, intents: MessageQueue, handler: ResolutionHandler, dependencies: Dependencies) -> None:
        self.intents = intents
        self.handler = handler
        self.dependencies = dependencies

    def sweep(self, max_batches: int = 10) -> int:
        """Check every due intent (up to `max_batches` batches); returns how many were repaired."""
        repaired = 0
        for _ in range(max_batches):
            messages = self.intents.receive(BATCH, HOLD)
            for message in messages:
                repaired += self._check(message.body)
                self.intents.delete(message)
            if len(messages) < BATCH:
                break
        return repaired

    def _check(self, intent: dict) -> int:
        task_id = intent["taskId"]
        if intent["kind"] == "task-resolved" and self.handler.handle(task_id, intent["runId"]):
            log.warning("repaired: resolution of task %s run %s had not been processed", task_id,
                        intent["runId"], extra={"taskId": task_id, "repair": "task-resolved"})
            return 1
        if intent["kind"] == "check-ready" and self.dependencies.schedule_if_ready(task_id):
            log.warning("repaired: task %s had all dependencies satisfied but was unscheduled", task_id,
                        extra={"taskId": task_id, "repair": "check-ready"})
            return 1
        return 0
