"""Creating tasks and the calls that act on one whole task: read, schedule, rerun, cancel."""

from __future__ import annotations

import logging

from ..domain import lifecycle, task_definition
from ..domain.errors import Conflict, InvalidInput, NotFound
from ..domain.task_status import TaskStatus, render_status
from ..domain.timestamps import utcnow
from ..storage.errors import AlreadyExists
from ..storage.task_table import MAX_DEFINITION_CHARS, TaskRecord, TaskTable, encode_definition
from .dependencies import Dependencies
from .task_groups import TaskGroups
from .task_queues import TaskQueues
from .task_updates import TaskUpdater

log = logging.getLogger("queue.tasks")


class Tasks:
    def __init__(self, tasks: TaskTable, updater: TaskUpdater, groups: TaskGroups, queues: TaskQueues,
                 dependencies: Dependencies) -> None:
        self.tasks = tasks
        self.updater = updater
        self.groups = groups
        self.queues = queues
        self.dependencies = dependencies

    def create(self, task_id: str, body: dict) -> dict:
        """createTask: idempotent; the same definition again answers with the current status."""
        now = utcnow()
        definition = task_definition.normalize(task_id, body, now)
        size = len(encode_definition(definition))
        if size > MAX_DEFINITION_CHARS:
            raise InvalidInput(f"task: the definition is {size} characters of JSON; at most "
                               f"{MAX_DEFINITION_CHARS} are allowed (move large data to artifacts)")
        existing = self.tasks.load(task_id, with_definition=True)
        if existing is not None:
            return self._recreated(existing, definition)
        self.groups.join(definition, task_id)
        status = TaskStatus.new(task_id, definition)
        if self._ready(task_id, definition):
            status = lifecycle.schedule(status, now)
            self.updater.add_hint(definition, task_id, status.pending_run)
        try:
            record = self.tasks.insert(definition, status)
        except AlreadyExists:
            return self._recreated(self.tasks.load(task_id, with_definition=True), definition)
        if not status.runs:
            self.dependencies.recheck(task_id, definition["requires"])
            record = self.tasks.load(task_id)
        self.queues.seen(definition["taskQueueId"], definition["expires"])
        self.updater.signal.notify(definition["taskQueueId"])
        log.info("task %s created in group %s on %s", task_id, definition["taskGroupId"],
                 definition["taskQueueId"], extra={"taskId": task_id, "action": "create"})
        return render_status(record.summary, record.status)

    def _ready(self, task_id: str, definition: dict) -> bool:
        """Register the task's dependencies; True when none is left to wait for."""
        if not definition["dependencies"]:
            return True
        # If this process dies before the re-check below, the repair sweep does it.
        self.updater.events.intend_readiness_check(task_id)
        return self.dependencies.register(task_id, definition)

    @staticmethod
    def _recreated(existing: TaskRecord, definition: dict) -> dict:
        if not task_definition.same_definition(existing.definition, definition):
            raise Conflict(f"Task {existing.task_id} already exists with a different definition")
        return render_status(existing.summary, existing.status)

    def definition(self, task_id: str) -> dict:
        return self._load(task_id, with_definition=True).definition

    def status(self, task_id: str) -> dict:
        record = self._load(task_id)
        return render_status(record.summary, record.status)

    def _load(self, task_id: str, with_definition: bool = False) -> TaskRecord:
        record = self.tasks.load(task_id, with_definition=with_definition)
        if record is None:
            raise NotFound(f"Task {task_id} not found")
        return record

    def schedule(self, task_id: str) -> dict:
        return self._change(task_id, lifecycle.schedule, "schedule")

    def rerun(self, task_id: str) -> dict:
        return self._change(task_id, lifecycle.rerun, "rerun")

    def cancel(self, task_id: str) -> dict:
        return self._change(task_id, lifecycle.cancel, "cancel")

    def _change(self, task_id: str, transition, action: str) -> dict:
        now = utcnow()
        record = self.updater.apply(task_id, lambda status: transition(status, now), action)
        return render_status(record.summary, record.status)
