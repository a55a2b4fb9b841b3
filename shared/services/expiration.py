"""What happens when a task expires: it is deleted, with everything kept about it.

Taskcluster keeps a task until its `expires`; after that the task, its runs (on the task
row), its dependency and requirement rows (with the progress of its long fan-outs) and its
group membership are deleted, and a group (with its task graph, which shares its id) once
the group's own expiry, the latest of its tasks', has passed.

Items are put in a time index (day buckets) before the rows they point at are written, so
the sweep reads only what is due and a crash during creation leaves at worst an item that
points at nothing. Each deletion is repeatable and the task row goes last, so a sweep
killed midway is finished by the next one.
"""

from __future__ import annotations

import logging
from datetime import datetime

from ..domain.timestamps import parse_iso
from ..storage.dependency_table import DependencyTable
from ..storage.requirement_table import RequirementTable
from ..storage.task_graph_table import TaskGraphTable
from ..storage.task_group_table import TaskGroupTable
from ..storage.task_table import TaskTable
from ..storage.time_index import DueItem, TimeIndex
from .time_resolvers import KEEP, TimeResolver

log = logging.getLogger("queue.expiration")
TASK, GROUP = "task.", "group."


class Expiration(TimeResolver):
    action = "expired"

    def __init__(self, index: TimeIndex, tasks: TaskTable, dependencies: DependencyTable,
                 requirements: RequirementTable, groups: TaskGroupTable,
                 graphs: TaskGraphTable) -> None:
        super().__init__(index)
        self.tasks = tasks
        self.dependencies = dependencies
        self.requirements = requirements
        self.groups = groups
        self.graphs = graphs

    def watch(self, definitions: dict[str, dict]) -> None:
        """Index new tasks (taskId -> definition) and their groups at their expiry."""
        group_expiry: dict[str, str] = {}
        for definition in definitions.values():
            group_id = definition["taskGroupId"]
            group_expiry[group_id] = max(group_expiry.get(group_id, ""), definition["expires"])
        self.index.add([(definition["expires"], TASK + task_id) for task_id, definition in definitions.items()]
                       + [(expires, GROUP + group_id) for group_id, expires in group_expiry.items()])

    def _handle(self, item: DueItem, now: datetime) -> int | None:
        if item.key.startswith(GROUP):
            return self._expire_group(item.key[len(GROUP):], now)
        return self._expire_task(item.key[len(TASK):])

    def _expire_task(self, task_id: str) -> int | None:
        record = self.tasks.load(task_id, with_definition=True)
        if record is None:
            return 0  # never created, or deleted by an earlier sweep
        if not record.status.state.is_resolved:
            return KEEP  # past its deadline too: the deadline resolver resolves it first
        self.dependencies.forget(task_id, record.definition["dependencies"])
        self.requirements.forget(task_id)
        self.groups.forget_member(record.summary["taskGroupId"], task_id)
        self.tasks.delete(task_id)  # last: while it exists, the item is handled again
        log.info("task %s expired and was deleted", task_id, extra={"taskId": task_id, "action": self.action})
        return 1

    def _expire_group(self, group_id: str, now: datetime) -> int:
        group = self.groups.load(group_id)
        if group is None or parse_iso(group.expires) > now:
            return 0  # gone already, or extended by a later task (indexed at its own expiry)
        self.graphs.forget(group_id)
        self.groups.forget(group_id)  # last: the group row goes with its partition
        log.info("task group %s expired and was deleted", group_id,
                 extra={"taskGroupId": group_id, "action": self.action})
        return 0
