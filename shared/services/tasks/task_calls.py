"""The calls that act on one whole task: create, read (one, or several at once), schedule,
rerun, cancel, dependents."""

from __future__ import annotations

from typing import Callable

from shared.domain import lifecycle, task_definition
from shared.domain.errors import NotFound
from shared.domain.ids import is_slugid
from shared.domain.task_status import render_status
from shared.domain.timestamps import utcnow
from shared.runtime.thread_pools import GROUP_CANCELS
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.dependencies.resolution_messages import MAX_NAMED, SharedIntent
from shared.services.tasks.task_creation import TaskCreation
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.tasks.task_updater import TaskUpdater

Authorize = Callable[[TaskRecord], None] | None   # the caller's scope check on the task as read


class TaskCalls:
    def __init__(self, task_table: TaskTable, updater: TaskUpdater, task_groups: TaskGroups, dependency_tracker: DependencyTracker,
                 creation: TaskCreation) -> None:
        self.task_table = task_table
        self.updater = updater
        self.task_groups = task_groups
        self.dependency_tracker = dependency_tracker
        self.creation = creation

    def create(self, task_id: str, body: dict, authorize: Callable[[dict], None] | None = None) -> dict:
        """createTask: idempotent; the same definition again answers with the current status.
        `authorize(definition)` checks the caller's scopes against the normalized definition."""
        now = utcnow()
        definition = task_definition.normalize(task_id, body, now)
        if authorize is not None:
            authorize(definition)
        return self.creation.create({task_id: definition}, now)[task_id]

    def definition(self, task_id: str) -> dict:
        return self._load(task_id, with_definition=True).definition

    def status(self, task_id: str) -> dict:
        record = self._load(task_id)
        return render_status(record.summary, record.status)

    def definitions(self, task_ids: list[str], after: str, limit: int) -> tuple[dict, str | None]:
        """The `tasks` call: the definitions of the tasks named, a page at a time; a taskId
        that names no task is left out (Taskcluster's batch reads ignore them)."""
        records, last = self._batch(task_ids, after, limit, with_definition=True)
        return {"tasks": [{"taskId": record.task_id, "task": record.definition} for record in records]}, last

    def statuses(self, task_ids: list[str], after: str, limit: int) -> tuple[dict, str | None]:
        """The `statuses` call: as `definitions`, with each task's status."""
        records, last = self._batch(task_ids, after, limit)
        return {"statuses": [{"taskId": record.task_id, "status": render_status(record.summary, record.status)}
                             for record in records]}, last

    def _batch(self, task_ids: list[str], after: str, limit: int,
               with_definition: bool = False) -> tuple[list[TaskRecord], str | None]:
        """The tasks of one page of `task_ids` (each once, in the order given), the page
        after the taskId `after`, and the last taskId of the page when more follow."""
        unique = [task_id for task_id in dict.fromkeys(task_ids) if is_slugid(task_id)]   # others name no task
        # A token that does not continue a read of these taskIds starts over, as Taskcluster's.
        start = unique.index(after) + 1 if after in unique else 0
        page = unique[start:start + limit]
        records = self.task_table.load_many(page, with_definition) if page else []
        return [record for record in records if record is not None], \
            page[-1] if start + limit < len(unique) else None

    def _load(self, task_id: str, with_definition: bool = False) -> TaskRecord:
        record = self.task_table.load(task_id, with_definition=with_definition)
        if record is None:
            raise NotFound(f"Task {task_id} not found")
        return record

    def schedule(self, task_id: str, authorize: Authorize = None) -> dict:
        return self._change(task_id, lifecycle.schedule, "schedule", authorize)

    def rerun(self, task_id: str, authorize: Authorize = None) -> dict:
        """rerunTask. Its group's deadline row is told first (see `TaskGroupTable.member_rerun`),
        once the caller may and the task would be rerun."""
        record = self._load(task_id)
        if authorize is not None:
            authorize(record)
        if lifecycle.rerun(record.status, utcnow()) is not record.status:
            self.task_groups.member_rerun(record.summary["taskGroupId"], task_id, record.status.deadline)
        return self._change(task_id, lifecycle.rerun, "rerun", authorize)

    def cancel(self, task_id: str, authorize: Authorize = None) -> dict:
        return self._change(task_id, lifecycle.cancel, "cancel", authorize)

    def cancel_if_unresolved(self, task_id: str, standing: SharedIntent | None = None) -> bool:
        """Cancel for cancelTaskGroup: True if this call canceled the task. `standing`: the
        repair intent that names it (see `cancel_many`)."""
        now = utcnow()

        def cancel(status):
            if status.state.is_resolved or lifecycle.is_past_deadline(status, now):
                return status
            return lifecycle.cancel(status, now)
        return self.updater.try_apply(task_id, cancel, "cancel (group)", standing=standing)

    def cancel_many(self, task_ids: list[str]) -> list[bool]:
        """`cancel_if_unresolved` for each task, at once, under one repair intent for each
        MAX_NAMED of them (see `SharedIntent`): a page of cancelTaskGroup's members cost a queue
        message and its deletion per task."""
        canceled = []
        for start in range(0, len(task_ids), MAX_NAMED):
            some = task_ids[start:start + MAX_NAMED]
            with self.updater.messages.intend_many(some) as standing:
                canceled += GROUP_CANCELS.map(lambda task_id: self.cancel_if_unresolved(task_id, standing), some)
        return canceled

    def dependents(self, task_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listDependentTasks: the tasks that depend on `task_id`, a page at a time."""
        record = self._load(task_id)
        tasks, last = self.task_groups.page_of_tasks(self.dependency_tracker.dependents(record, after, limit + 1), limit)
        # A listing left by a createTask refused for another definition under a taskId (see
        # `TaskCreation.prepare`) names a task that does not wait on this one: not shown.
        tasks["tasks"] = [task for task in tasks["tasks"] if task_id in task["task"]["dependencies"]]
        return {"taskId": task_id, **tasks}, last

    def _change(self, task_id: str, transition, action: str, authorize: Authorize) -> dict:
        now = utcnow()
        record = self.updater.apply(task_id, lambda status: transition(status, now), action, authorize=authorize)
        return render_status(record.summary, record.status)
