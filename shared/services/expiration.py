"""What happens when a task expires: it is deleted, with everything kept about it.

Taskcluster keeps a task until its `expires`; after that the task, its runs (on the task
row), its dependency and requirement rows and its group membership are deleted (the progress
of a long fan-out is an item of the expiry index itself), and a group (with its task graph,
which shares its id) once the group's own expiry, the latest of its tasks', has passed.

A task's expiry is put in a time index (day buckets) by the deadline sweep, once the task
is past its deadline and so resolved for good (`expires` is never before the deadline):
the sweep reads only what is due. Each deletion is repeatable and the task row goes last,
so a sweep killed midway is finished by the next one.
"""

from __future__ import annotations

import logging
from datetime import datetime

from ..domain.timestamps import parse_iso
from ..storage.dependency_table import DependencyTable
from ..storage.requirement_table import RequirementTable
from ..storage.task_graph_table import TaskGraphTable
from ..storage.task_group_table import TaskGroupTable
from ..storage.task_table import TaskRecord, TaskTable
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
        """Index tasks (taskId -> definition or summary) and their groups at their expiry."""
        group_expiry: dict[str, str] = {}
        for definition in definitions.values():
            group_id = definition["taskGroupId"]
            group_expiry[group_id] = max(group_expiry.get(group_id, ""), definition["expires"])
        self.index.add([(definition["expires"], TASK + task_id) for task_id, definition in definitions.items()]
                       + [(expires, GROUP + group_id) for group_id, expires in group_expiry.items()])

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        outcomes: list[int | None] = [0] * len(items)
        expiring: dict[int, TaskRecord] = {}
        gone: set[str] = set()   # groups deleted whole in this batch (an item sorts before its tasks')
        for position, item in enumerate(items):
            if item.key.startswith(GROUP):
                group_id = item.key[len(GROUP):]
                if self._expire_group(group_id, now):
                    gone.add(group_id)
            elif item.key.startswith(TASK):
                record = self.tasks.load(item.key[len(TASK):], with_definition=True)
                if record is not None and not record.status.state.is_resolved:
                    outcomes[position] = KEEP   # past its deadline too: the deadline resolver resolves it first
                elif record is not None:
                    expiring[position] = record
            # anything else (a long fan-out's progress) only goes with its item
        self._expire_tasks(list(expiring.values()), gone)
        for position in expiring:
            outcomes[position] = 1
        return outcomes

    def _expire_tasks(self, records: list[TaskRecord], gone_groups: set[str]) -> None:
        for record in records:
            dependencies = record.definition["dependencies"]
            self.dependencies.forget(record.task_id, dependencies)
            if dependencies:
                self.requirements.forget(record.task_id)   # none was ever written for a task without any
        self.groups.forget_members([(record.summary["taskGroupId"], record.task_id) for record in records
                                    if record.summary["taskGroupId"] not in gone_groups])
        for record in records:
            self.tasks.delete(record.task_id)  # last: while it exists, its item is handled again
            log.info("task %s expired and was deleted", record.task_id,
                     extra={"taskId": record.task_id, "action": self.action})

    def _expire_group(self, group_id: str, now: datetime) -> bool:
        """Delete a group (and its graph) whose expiry passed; True if it was deleted."""
        group = self.groups.load(group_id)
        if group is None or parse_iso(group.expires) > now:
            return False  # gone already, or extended by a later task (indexed at its own expiry)
        self.graphs.forget(group_id)
        self.groups.forget(group_id)  # last: the group row goes with its partition
        log.info("task group %s expired and was deleted", group_id,
                 extra={"taskGroupId": group_id, "action": self.action})
        return True
