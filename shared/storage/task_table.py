"""The Tasks table: one row per task holding its definition and its status.

PartitionKey = taskId, RowKey = "task". The definition is written once, at creation;
afterwards only the status columns change, always through a conditional merge on the
row's ETag, so two writers can never both win from the same read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

from ..domain.runs import Run
from ..domain.task_status import TaskStatus
from . import long_text, lost_responses
from .account import StorageAccount
from .batches import delete_row
from .errors import AlreadyExists, ChangedSinceRead

ROW = "task"
MAX_DEFINITION_CHARS = 400_000
SUMMARY_FIELDS = ("provisionerId", "workerType", "taskQueueId", "schedulerId", "projectId",
                  "taskGroupId", "priority", "deadline", "expires")
_STATUS_COLUMNS = ["retries", "retriesLeft", "runs", "state", "takenUntil"]


@dataclass(frozen=True)
class TaskRecord:
    summary: dict               # the definition fields a status shows (see SUMMARY_FIELDS)
    status: TaskStatus
    definition: dict | None = None  # None when loaded without it
    etag: str | None = None

    @property
    def task_id(self) -> str:
        return self.status.task_id


def encode_definition(definition: dict) -> str:
    return json.dumps(definition, separators=(",", ":"), sort_keys=True, ensure_ascii=True)


def _status_columns(status: TaskStatus) -> dict:
    running = status.running_run
    return {
        "retries": status.retries,
        "retriesLeft": status.retries_left,
        "runs": json.dumps(status.runs_json(), separators=(",", ":")),
        "state": status.state.value,
        "takenUntil": running.taken_until if running else "",
    }


class TaskTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table("Tasks")

    def insert(self, definition: dict, status: TaskStatus) -> TaskRecord:
        text = encode_definition(definition)
        entity = {"PartitionKey": status.task_id, "RowKey": ROW}
        entity.update({name: definition[name] for name in SUMMARY_FIELDS})
        entity.update(long_text.to_columns("definition", text))
        entity.update(_status_columns(status))
        try:
            meta = lost_responses.insert(self._table, entity)
        except ResourceExistsError as exc:
            raise AlreadyExists(status.task_id) from exc
        summary = {name: definition[name] for name in SUMMARY_FIELDS}
        return TaskRecord(summary, status, definition, meta.get("etag"))

    def load(self, task_id: str, with_definition: bool = False) -> TaskRecord | None:
        select = None if with_definition else [*SUMMARY_FIELDS, *_STATUS_COLUMNS]
        try:
            entity = self._table.get_entity(task_id, ROW, select=select)
        except ResourceNotFoundError:
            return None
        return _record(task_id, entity, with_definition)

    def save_status(self, record: TaskRecord, status: TaskStatus) -> TaskRecord:
        """Write `status` if the row is still as `record` read it; else ChangedSinceRead."""
        entity = {"PartitionKey": status.task_id, "RowKey": ROW, **_status_columns(status)}
        try:
            meta = lost_responses.update(self._table, entity, record.etag)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            raise ChangedSinceRead(status.task_id) from exc
        return replace(record, status=status, etag=meta.get("etag"))

    def delete(self, task_id: str) -> None:
        delete_row(self._table, task_id, ROW)


def _record(task_id: str, entity, with_definition: bool) -> TaskRecord:
    definition = None
    if with_definition:
        definition = json.loads(long_text.from_columns("definition", entity))
    status = TaskStatus(
        task_id=task_id,
        retries=entity["retries"],
        retries_left=entity["retriesLeft"],
        deadline=entity["deadline"],
        runs=tuple(Run.from_json(run) for run in json.loads(entity["runs"])),
    )
    summary = {name: entity[name] for name in SUMMARY_FIELDS}
    return TaskRecord(summary, status, definition, entity.metadata.get("etag"))
