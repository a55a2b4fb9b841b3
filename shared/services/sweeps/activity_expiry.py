"""Workers and task queues that went quiet: deleted once their `expires` has passed.

Both push their own `expires` forward while in use (a worker's with each claimWork, a task
queue's with each task or claim), and those writes must stay free of index writes. So each
row is put in a time index once, when it is first written, at the expiry it had then; when
the item comes due the row is read again: moved forward, it is indexed anew at its current
expiry; lapsed, it is deleted, conditionally on its ETag, so a claimWork or createTask that
touched it meanwhile wins and the item is looked at again by the next sweep.

Until the sweep gets to it, a lapsed row is hidden from listWorkers, getWorker,
listTaskQueues and getTaskQueue, as Taskcluster lists only active workers and queues.
"""

from __future__ import annotations

import logging
from datetime import datetime

from shared.domain.timestamps import parse_iso
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.keys import bounded_key, escape_key, unescape_key
from shared.storage.tables.task_queue_table import TaskQueueTable
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.worker_table import WorkerRecord, WorkerTable
from shared.services.sweeps.sweep import KEEP, Sweep

log = logging.getLogger("queue.expiration")


def lapsed(expires: str, now: datetime) -> bool:
    return parse_iso(expires) <= now


class ExpiringRows(Sweep):
    """Rows indexed once at their expiry, read again when it comes: re-indexed if their
    expiry moved forward, else deleted if unchanged since read (the subclass says how)."""

    kind = ""
    action = "expired"

    def _handle(self, item: DueItem, now: datetime) -> int | None:
        record = self._load(item)
        if record is None:
            return 0                                   # deleted before, or its first write never landed
        if not lapsed(record.expires, now):
            # still in use: look again when it may lapse
            self.index.add([(record.expires, item.key)], {item.key: item.value} if item.value else None)
            return 0
        try:
            self._delete(record)
        except ChangedSinceRead:
            return KEEP                                # used again since it was read
        log.info("%s %s expired and was deleted", self.kind, item.value or item.key,
                 extra={"action": self.action, self.kind: item.value or item.key})
        self._expired(record)
        return 1

    def _expired(self, record) -> None:
        """After a lapsed row was deleted: what else its kind records (by default nothing)."""

    def _watch_named(self, name: str, expires: str) -> None:
        """Index the row named `name` at `expires`: keyed by the name within a key's bounds,
        the name itself as the item's value, which `_load` reads the row by."""
        key = bounded_key(name, 400)
        self.index.add([(expires, key)], {key: name})


class WorkerExpiry(ExpiringRows):
    kind = "worker"

    def __init__(self, index: TimeIndex, table: WorkerTable) -> None:
        super().__init__(index)
        self.table = table

    def watch(self, worker: WorkerRecord) -> None:
        """Index a worker about to be written for the first time."""
        self.index.add([(worker.expires, worker_key(worker.task_queue_id, worker.worker_group, worker.worker_id))])

    def _load(self, item: DueItem) -> WorkerRecord | None:
        task_queue, worker_group, worker_id = item.key.split(".")
        return self.table.load(unescape_key(task_queue), worker_group, worker_id)

    def _delete(self, record: WorkerRecord) -> None:
        self.table.delete(record)


class TaskQueueExpiry(ExpiringRows):
    kind = "taskQueueId"

    def __init__(self, index: TimeIndex, table: TaskQueueTable) -> None:
        super().__init__(index)
        self.table = table

    def watch(self, task_queue_id: str, expires: str) -> None:
        """Index a task queue about to be written for the first time."""
        self.index.add([(expires, escape_key(task_queue_id))])

    def _load(self, item: DueItem):
        return self.table.get(unescape_key(item.key))

    def _delete(self, record) -> None:
        self.table.delete(record)


def worker_key(task_queue_id: str, worker_group: str, worker_id: str) -> str:
    # No part holds a '.': task queue ids, worker groups and worker ids are [A-Za-z0-9_-/].
    return f"{escape_key(task_queue_id)}.{worker_group}.{worker_id}"
