"""What happens when a task expires: it is deleted, with everything kept about it.

Taskcluster keeps a task until its `expires`; after that the task, its runs (on the task
row), its runs' results documents (a blob each, at a name known from the run: no listing),
its dependency and requirement rows and its group membership are deleted (the progress of a
long fan-out is an item of the expiry index itself), and a group (with its task graph,
which shares its id) once the group's own expiry, a step past the latest of its tasks', has
passed (see `task_groups.EXPIRY_STEP`). A group made for one task (Taskcluster's default,
`lone`) keeps that task's expiry and goes in one transaction: its rows share one partition,
and it has no graph.
Artifacts and objects have expiry items of their own (see `artifact_expiry`).

A task's expiry is put in a time index (day buckets) by the deadline sweep, once the task
is past its deadline and so resolved for good (`expires` is never before the deadline),
from the task's row or from its group's deadline row (see `deadline_resolver`):
the sweep reads only what is due. Each deletion is repeatable and the task row goes last,
so a sweep killed midway is finished by the next one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.domain.dependencies import dependencies_of
from shared.domain.timestamps import parse_iso
from shared.storage.tables.dependency_table import DependencyTable
from shared.storage.tables.requirement_table import RequirementTable
from shared.storage.tables.task_graph_table import TaskGraphTable
from shared.storage.tables.task_group_table import DeadlineRow, TaskGroupTable
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.services.tasks.run_results import results_blob
from shared.services.sweeps.sweep import KEEP, Sweep
from shared.services.task_groups.task_groups import EXPIRY_STEP

log = logging.getLogger("queue.expiration")
TASK, GROUP = "task.", "group."
NOTED_DEPENDENCIES = 100   # dependencies an expiry item notes; a task with more is read when it expires
# A group to be deleted within this of a sweep takes its expiring tasks' member rows with it.
MEMBERS_LEFT_FOR = EXPIRY_STEP + timedelta(minutes=10)


@dataclass(frozen=True)
class _Expiring:
    task_id: str
    group_id: str
    dependencies: list[str]   # those whose TaskDependencies rows hold it
    runs: int       # each has a results document (an item noted before they did notes none)
    requirements: bool = True   # it may have requirement rows (it waited on two tasks or more)
    deadline: str = ""          # its group's deadline row's (not noted: that row goes with the group)

    def note(self) -> str:
        return json.dumps({"group": self.group_id, "dependencies": self.dependencies, "runs": self.runs,
                           "requirements": self.requirements, "deadline": self.deadline})


class TaskExpiry(Sweep):
    action = "expired"

    def __init__(self, index: TimeIndex, task_table: TaskTable, dependency_table: DependencyTable,
                 requirement_table: RequirementTable, group_table: TaskGroupTable,
                 graph_table: TaskGraphTable, blobs) -> None:
        super().__init__(index)
        self.task_table = task_table
        self.dependency_table = dependency_table
        self.requirement_table = requirement_table
        self.group_table = group_table
        self.graph_table = graph_table
        self.blobs = blobs

    def watch(self, records: list[TaskRecord], not_before: str,
              resolved: list[tuple[str, DeadlineRow]] = ()) -> None:
        """Index tasks past their deadline (so resolved for good) and their groups at their
        expiry, or at `not_before` if that is later (a late sweep's `now`, which the sweep's
        cursor has not passed): tasks as read (`records`), and tasks without dependencies
        that resolved in time, as their groups' deadline rows note them (`resolved`, as
        (taskGroupId, row)). Each task's item notes its group, dependencies and number of
        runs (final past the deadline), so the expiration reads no task row (unless there
        are too many dependencies to note)."""
        expiring = [(record.summary["expires"], _what_expires(record)) for record in records]
        expiring += [(row.expires, _Expiring(row.task_id, group_id, [], row.runs, False, row.deadline))
                     for group_id, row in resolved]
        group_expiry: dict[str, str] = {}
        items, values = [], {}
        for expires, task in expiring:
            expires = max(expires, not_before)
            group_expiry[task.group_id] = max(group_expiry.get(task.group_id, ""), expires)
            items.append((expires, TASK + task.task_id))
            if len(task.dependencies) <= NOTED_DEPENDENCIES:
                values[TASK + task.task_id] = task.note()
        self.index.add(items + [(expires, GROUP + group_id) for group_id, expires in group_expiry.items()], values)

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        outcomes: list[int | None] = [0] * len(items)
        expiring: dict[int, _Expiring] = {}
        # Groups whose rows go whole: gone (deleted in this batch, or before), or to be deleted
        # within a step (see `_expire_group`). Their expiring tasks' member rows are left to
        # that: one transaction per bucket of each batch spared (a third of what a task's
        # expiry cost when each of 100 tasks of a group met its own bucket). An item sorts
        # before its tasks'.
        whole: set[str] = set()
        for position, item in enumerate(items):
            if item.key.startswith(GROUP):
                group_id = item.key[len(GROUP):]
                going = self._expire_group(group_id, now)
                if going is None or going <= now + MEMBERS_LEFT_FOR:
                    whole.add(group_id)
            elif item.key.startswith(TASK):
                task, unresolved = self._expiring(item)
                if unresolved:
                    outcomes[position] = KEEP   # past its deadline too: the deadline resolver resolves it first
                elif task is not None:
                    expiring[position] = task
            # anything else (a long fan-out's progress) only goes with its item
        self._expire_tasks(list(expiring.values()), whole)
        for position in expiring:
            outcomes[position] = 1
        return outcomes

    def _expiring(self, item: DueItem) -> tuple[_Expiring | None, bool]:
        """What an item's task needs deleted, from its note or else from its row (None: the
        task is gone), and whether it is unresolved still (then it waits)."""
        task_id = item.key[len(TASK):]
        if item.value:
            noted = json.loads(item.value)
            return _Expiring(task_id, noted["group"], noted["dependencies"], noted.get("runs", 0),
                             noted.get("requirements", True), noted.get("deadline", "")), False
        record = self.task_table.load(task_id, with_definition=True)
        if record is None:
            return None, False
        if not record.status.state.is_resolved:
            return None, True
        return _what_expires(record), False

    def _expire_tasks(self, tasks: list[_Expiring], whole_groups: set[str]) -> None:
        self.blobs.delete_many([results_blob(task.task_id, run_id) for task in tasks for run_id in range(task.runs)])
        for task in tasks:
            self.dependency_table.forget(task.task_id, task.dependencies)
            if task.requirements:
                self.requirement_table.forget(task.task_id)
        self.group_table.forget_members([(task.group_id, task.task_id, task.deadline) for task in tasks
                                    if task.group_id not in whole_groups])
        self.task_table.delete_many([task.task_id for task in tasks])  # last: while it exists, its item is handled again
        for task in tasks:
            log.info("task %s expired and was deleted", task.task_id,
                     extra={"taskId": task.task_id, "action": self.action})

    def _expire_group(self, group_id: str, now: datetime) -> datetime | None:
        """Delete a group (and its graph) whose expiry passed. None if it is gone (now or
        before); else when it is to go, looked at again then."""
        group = self.group_table.load(group_id)
        if group is not None and group.lone and parse_iso(group.expires) <= now:
            # One task's group (Taskcluster's default) has no graph (see `TaskGroups.adopt`) and
            # one partition: gone in one transaction, unless it changed since it was read.
            if self.group_table.forget_lone(group):
                self._forgotten(group_id)
                return None
            group = self.group_table.load(group_id)
        if group is None:
            return None
        expires = parse_iso(group.expires)
        if expires > now:
            # Extended by a later task, or kept a step past its last one's expiry (see
            # `task_groups.EXPIRY_STEP`): looked at again then (the same item, if that task's).
            # A task joining meanwhile keeps it longer, and with it the member rows of the
            # tasks expiring now (see `_handle_batch`), which no listing shows (their tasks
            # are gone) and which go with it.
            self.index.add([(group.expires, GROUP + group_id)])
            return expires
        self.graph_table.forget(group_id)
        self.group_table.forget(group_id)  # last: the group row goes with its partition
        self._forgotten(group_id)
        return None

    def _forgotten(self, group_id: str) -> None:
        log.info("task group %s expired and was deleted", group_id,
                 extra={"taskGroupId": group_id, "action": self.action})


def _what_expires(record: TaskRecord) -> _Expiring:
    """What a task read with its definition needs deleted when it expires."""
    dependencies = dependencies_of(record.definition)
    rows = list(record.dependency_rows) if record.dependency_rows is not None else dependencies
    return _Expiring(record.task_id, record.summary["taskGroupId"], rows, len(record.status.runs),
                     len(dependencies) > 1, record.status.deadline)
