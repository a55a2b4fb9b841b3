"""Completed tasks indexed by their routes, as Taskcluster's index service does on each
`task-completed` message: every route `index.<namespace>` inserts the task at `<namespace>`,
with the rank, expiry and data of `task.extra.index` (see `domain.index`).

It runs in a resolution's follow-up (`dependency_resolver`), so it is as durable as the rest
of it: until the follow-up is done, the claimed run's row stands for the resolution, and a
process that dies before the index is written leaves it to be handled again (announced by
the claim expiry sweep, or repaired). Inserting the same entry again changes nothing. A
resolution says whether the task has an index route (`Resolution.index_routes`, from the
routes on its row), so a task without one costs no storage round trip here.
"""

from __future__ import annotations

import logging

from shared.domain.index import entries_for_task
from shared.domain.runs import RunState
from shared.services.dependencies.resolution_messages import Resolution
from shared.services.index.index_expiry import IndexExpiry
from shared.storage.tables.index_table import IndexTable
from shared.storage.tables.task_table import TaskTable

log = logging.getLogger("index")


class Indexer:
    def __init__(self, table: IndexTable, expiry: IndexExpiry, task_table: TaskTable) -> None:
        self.table = table
        self.expiry = expiry
        self.task_table = task_table

    def task_resolved(self, resolution: Resolution) -> int:
        """Index a completed task at its routes; how many entries it asked for."""
        if resolution.state is not RunState.COMPLETED or not resolution.index_routes:
            return 0
        task_id = resolution.task_id
        # The definition never changes: the one this process remembers will do.
        record = self.task_table.last_written(task_id, with_definition=True) \
            or self.task_table.load(task_id, with_definition=True)
        if record is None:
            return 0   # expired and deleted before its resolution was handled again
        entries = entries_for_task(task_id, record.definition)
        self.expiry.watch(entries)
        for entry in entries:
            stored = self.table.insert(entry)
            log.info("task %s indexed at %s%s", task_id, entry.namespace,
                     "" if stored.task_id == task_id else f" (task {stored.task_id} outranks it there)",
                     extra={"taskId": task_id, "action": "indexed"})
        return len(entries)
