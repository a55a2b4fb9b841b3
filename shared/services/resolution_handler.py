"""What follows a task's resolution: its dependents are unblocked, its task graph reacts
(rerun, blocked, finished), and its group learns that one more member resolved. Driven by the 'task resolved' event and by repairs.

Queue messages are only hints; the task row says whether the run resolved the task, and
a marker row says whether the work was done. Handling one twice must not matter.
"""

from __future__ import annotations

import logging

from ..domain.dependencies import resolution_of
from ..domain.timestamps import to_iso, utcnow
from ..storage.handled_table import HandledTable
from ..storage.task_table import TaskTable
from .dependencies import Dependencies
from .task_graphs import TaskGraphs
from .task_groups import TaskGroups

log = logging.getLogger("queue.resolutions")


class ResolutionHandler:
    def __init__(self, tasks: TaskTable, dependencies: Dependencies, groups: TaskGroups,
                 graphs: TaskGraphs, handled: HandledTable) -> None:
        self.tasks = tasks
        self.dependencies = dependencies
        self.groups = groups
        self.graphs = graphs
        self.handled = handled

    def handle(self, task_id: str, run_id: int) -> bool:
        """Process the resolution of `task_id` by run `run_id`; False if there was nothing to do."""
        done, after = self.handled.progress(task_id, run_id)
        if done:
            return False
        record = self.tasks.load(task_id)
        state = resolution_of(record.status, run_id) if record else None
        if state is None:
            return False  # an intent whose write never happened, or a retried run
        expires = record.summary["expires"]
        self.dependencies.task_resolved(
            record, state, after, lambda last: self.handled.checkpoint(task_id, run_id, last, expires))
        self.graphs.task_resolved(record, run_id, state)
        group_id = record.summary["taskGroupId"]
        if self.groups.member_resolved(group_id, task_id, to_iso(utcnow())):
            log.info("task group %s resolved", group_id, extra={"taskGroupId": group_id})
        self.handled.mark(task_id, run_id, expires)
        log.info("task %s run %s resolution processed", task_id, run_id, extra={"taskId": task_id})
        return True
