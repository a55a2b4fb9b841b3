"""The Tasks tables: one row per task holding its definition and its status.

A task's row is in the table `Tasks<nn>` (TABLES of them, by the taskId's second
character), PartitionKey = the taskId's first character, RowKey = taskId. Tasks created or
expiring together are written a transaction per table and partition: a graph's part is a
run of tasks in taskId order, which share one or two first characters, and a sweep's
hundred expired tasks share about 30 (slugids' first character takes 32 values), so their
rows cost a few round trips instead of one each. Azure serves 2,000 entities/s per
partition, 64,000/s a table over the 32, and a table's size costs it nothing.

Azurite finds a row by walking its partition, and updates or deletes one in time that grows
with its table (see `buckets`): with every task in one table of 32 partitions, a point read
or merge of a task cost 330 us of LokiJS at 30,000 tasks (partitions of 940 rows; 65% of
what LokiJS did while a graph of 30,000 ran) and about three times that at 100,000. Spread
over TABLES tables, a partition holds 1/(32 TABLES) of the tasks; a part of a small graph
costs a few more transactions (its run of tasks is spread over the tables).

The definition is written once, at creation;
afterwards only the status columns change (and the priority column, by changeTaskPriority:
the stored definition is read with it), always through a conditional merge on the
row's ETag, so two writers can never both win from the same read. The events each change
announces are written with it, in the row's outbox columns (see `outbox`).
"""

from __future__ import annotations

import json
from concurrent.futures import as_completed
from dataclasses import dataclass, field, replace
from typing import Callable

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.runtime.thread_pools import TASK_INSERTS, TASK_READS, TASK_SAVES
from shared.domain import task_events
from shared.domain.dependencies import Dependent, sole_dependency
from shared.domain.runs import Run
from shared.domain.task_events import Event
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.patterns import long_text
from shared.storage.client import lost_responses
from shared.storage.outbox import outbox
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import MAX_BATCH, delete_in_batches
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.recent_writes import RecentWrites
from shared.storage.patterns.table_shards import TableShards
from shared.storage.client.table import Table
from shared.storage.patterns.queries import row_or_none
from shared.domain.ids import SLUGID_CHARACTERS

PARTITION_CHARS = 1
TABLES = 8    # the tables tasks are spread over, by their id's second character
# Characters of definitions a transaction of new rows carries at most (a request holds 4 MiB).
BATCH_CHARS = 2_000_000
DEPENDENTS = "dependents"            # see TaskRecord.dependents
MORE_DEPENDENTS = "moreDependents"   # see TaskRecord.more_dependents
DEPENDENCY_ROWS = "dependencyRows"   # see TaskRecord.dependency_rows
SOLE_DEPENDENCY = "soleDependency"   # see TaskRecord.sole_dependency
# A row holds 1 MiB, strings count two bytes a character: the definition (700 KB at most),
# its routes and tags again for events (64 KB), the outbox (128 KB) and the runs fit.
MAX_DEFINITION_CHARS = 350_000
SUMMARY_FIELDS = ("provisionerId", "workerType", "taskQueueId", "schedulerId", "projectId",
                  "taskGroupId", "priority", "deadline", "expires")
_STATUS_COLUMNS = ["retries", "retriesLeft", "runs", "state", "takenUntil"]
# What events say of a task besides its status: its routes and tags (bounded by createTask).
NOTICE_CHUNKS = 1
MAX_NOTICE_CHARS = NOTICE_CHUNKS * long_text.CHUNK
_NOTICE_COLUMNS = ["noticeChunks", *(f"notice{i}" for i in range(NOTICE_CHUNKS))]
# Definitions up to this size are remembered with the row this process wrote (a claim answers
# with the definition); a larger one is read again when it is needed.
REMEMBERED_DEFINITION_CHARS = 16_000


@dataclass(frozen=True)
class NewTask:
    """A task row to insert: its definition, first status, and what it lists (see TaskRecord)."""
    definition: dict
    status: TaskStatus
    dependents: tuple[Dependent, ...] = ()
    more_dependents: bool = True
    dependency_rows: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TaskRecord:
    summary: dict               # the definition fields a status shows (see SUMMARY_FIELDS)
    status: TaskStatus
    definition: dict | None = None  # None when loaded without it
    etag: str | None = None
    notice: dict = field(default_factory=dict)      # routes and tags, for events
    outbox: tuple[Event, ...] = ()                  # events not published yet
    definition_chars: int = 0                       # the stored definition's size, when it was read or written
    # Who waits on it: the dependents the row lists (up to LISTED_DEPENDENTS, written with
    # the row or added before such a dependent is created), and whether the TaskDependencies
    # table holds others. A resolution reads the table only if it does (a row without the
    # column: it may, the safe side).
    dependents: tuple[Dependent, ...] = ()
    more_dependents: bool = True
    # The tasks it depends on whose TaskDependencies rows hold it (the others list it on
    # their rows): what its expiry deletes there. None: not recorded, so all of them.
    dependency_rows: tuple[str, ...] | None = None
    # The one task it waits on and its `requires` (`dependencies.sole_dependency`), () if it
    # waits on none or several; None: a row from before rows kept it. A resolution that finds
    # it listed checks these terms (`dependencies.terms_met`).
    sole_dependency: tuple[str, str] | tuple[()] | None = None

    @property
    def key(self) -> str:
        return self.task_id

    @property
    def task_id(self) -> str:
        return self.status.task_id


def encode_definition(definition: dict) -> str:
    return json.dumps(definition, separators=(",", ":"), sort_keys=True, ensure_ascii=True)


def notice_of(definition: dict) -> dict:
    """What events say of a task besides its status."""
    return {"routes": definition.get("routes", []), "tags": definition.get("tags", {})}


def encode_notice(definition: dict) -> str:
    return json.dumps(notice_of(definition), separators=(",", ":"), ensure_ascii=True)


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
    def __init__(self, account: StorageAccount, events: bool = True, marks: PublicationMarks | None = None) -> None:
        self._tables = task_tables(account)
        self._tables.all()   # each made now, not by the first request that needs it
        self.events = events   # False: no bus to publish on, so no outbox to keep
        self.marks = marks or PublicationMarks(account)
        self._recent: RecentWrites[TaskRecord] = RecentWrites(
            weigh=lambda record: record.definition_chars if record.definition is not None else 0)

    def insert(self, definition: dict, status: TaskStatus, dependents: tuple[Dependent, ...] = (),
               more_dependents: bool = True, dependency_rows: tuple[str, ...] | None = None) -> TaskRecord:
        """Create the task's row, with the events of its creation in its outbox; AlreadyExists
        if the task has a row."""
        return self._insert_row(*self._new_row(NewTask(definition, status, dependents, more_dependents,
                                                       dependency_rows)))

    def insert_many(self, tasks: list[NewTask]) -> list[TaskRecord | AlreadyExists]:
        """`insert` each task, a transaction per partition (and BATCH_CHARS of definitions);
        for each, its record, or AlreadyExists. A transaction refused (a row that exists, a
        request too large) is done again row by row."""
        outcomes: dict[str, TaskRecord | AlreadyExists] = {}
        chunks = _chunks([self._new_row(task) for task in tasks])
        inserted = TASK_INSERTS.map(self._insert_chunk, chunks) if len(chunks) > 1 else map(self._insert_chunk, chunks)
        for found in inserted:
            outcomes.update(found)
        return [outcomes[task.status.task_id] for task in tasks]

    def _insert_chunk(self, chunk: list[tuple[dict, TaskRecord]]) -> dict[str, TaskRecord | AlreadyExists]:
        """One partition's new rows in one transaction, or row by row if it is refused."""
        try:
            answers = self.table_of(chunk[0][1].task_id).submit_transaction(
                [("create", entity) for entity, _ in chunk]) if len(chunk) > 1 else None
        except (TableTransactionError, ResourceExistsError):
            answers = None
        if answers is not None:
            return {record.task_id: self._wrote(replace(record, etag=answer.get("etag")))
                    for (_, record), answer in zip(chunk, answers)}
        outcomes: dict[str, TaskRecord | AlreadyExists] = {}
        for entity, record in chunk:
            try:
                outcomes[record.task_id] = self._insert_row(entity, record)
            except AlreadyExists as exists:
                outcomes[record.task_id] = exists
        return outcomes

    def _new_row(self, task: NewTask) -> tuple[dict, TaskRecord]:
        """The new row's entity, and its record but for the ETag."""
        definition, status = task.definition, task.status
        summary = {name: definition[name] for name in SUMMARY_FIELDS}
        notice = notice_of(definition)
        events = self._events(status.task_id, summary, notice, None, status, ())
        entity = {**row_keys(status.task_id), **summary, **_dependents_columns(task.dependents, task.more_dependents)}
        if task.dependency_rows is not None:
            entity[DEPENDENCY_ROWS] = json.dumps(list(task.dependency_rows), separators=(",", ":"))
        encoded = encode_definition(definition)
        sole = sole_dependency(definition)
        entity[SOLE_DEPENDENCY] = json.dumps(sole, separators=(",", ":"))
        entity.update(long_text.to_columns("definition", encoded))
        entity.update(long_text.to_columns("notice", encode_notice(definition)))
        entity.update(_status_columns(status))
        entity.update(outbox.to_columns(events))
        return entity, TaskRecord(summary, status, definition, None, notice, events, len(encoded),
                                  task.dependents, task.more_dependents, task.dependency_rows, sole)

    def _insert_row(self, entity: dict, record: TaskRecord) -> TaskRecord:
        try:
            meta = lost_responses.insert(self.table_of(record.task_id), entity)
        except ResourceExistsError as exc:
            self.marks.refused(record.outbox, exc)
            raise AlreadyExists(record.task_id) from exc
        return self._wrote(replace(record, etag=meta.get("etag")))

    def load(self, task_id: str, with_definition: bool = False) -> TaskRecord | None:
        select = None if with_definition else [*SUMMARY_FIELDS, *_STATUS_COLUMNS, *_NOTICE_COLUMNS, *outbox.COLUMNS,
                                               DEPENDENTS, MORE_DEPENDENTS, SOLE_DEPENDENCY]
        entity = row_or_none(self.table_of(task_id), *_key(task_id), select=select)
        return _record(task_id, entity, with_definition) if entity is not None else None

    def load_many(self, task_ids: list[str], with_definition: bool = False) -> list[TaskRecord | None]:
        """`load` of each task, the reads at once; in the order given."""
        return list(TASK_READS.map(lambda task_id: self.load(task_id, with_definition), task_ids))

    def save_status(self, record: TaskRecord, status: TaskStatus) -> TaskRecord:
        """Write `status`, and the events of the change into the outbox, if the row is still
        as `record` read it; else ChangedSinceRead."""
        columns, events = self._status_change(record, status)
        try:
            etag = self._merge(record, columns)
        except ChangedSinceRead as error:
            self.marks.refused(events, error, record.outbox)
            raise
        return self._wrote(replace(record, status=status, etag=etag, outbox=events))

    def _status_change(self, record: TaskRecord, status: TaskStatus) -> tuple[dict, tuple[Event, ...]]:
        """The columns that write `status` over `record`, and the outbox they leave (the
        change's events added; the outbox is written only if they changed it)."""
        events = self._events(status.task_id, record.summary, record.notice, record.status, status, record.outbox)
        return {**_status_columns(status), **(outbox.to_columns(events) if events != record.outbox else {})}, events

    def save_priority(self, record: TaskRecord, priority: str,
                      announce: Callable[[dict], list[Event]]) -> TaskRecord:
        """Write the task's new `priority`, with the events `announce(new summary)` gives in the
        outbox, if the row is still as `record` read it; else ChangedSinceRead."""
        summary = {**record.summary, "priority": priority}
        events = self.marks.prepare(self, record.task_id, record.outbox + tuple(announce(summary))) \
            if self.events else ()
        columns = {"priority": priority, **(outbox.to_columns(events) if events != record.outbox else {})}
        try:
            etag = self._merge(record, columns)
        except ChangedSinceRead as error:
            self.marks.refused(events, error, record.outbox)
            raise
        self._recent.forget(record.task_id)   # a definition remembered says the old priority
        definition = {**record.definition, "priority": priority} if record.definition is not None else None
        return self._wrote(replace(record, summary=summary, definition=definition, etag=etag, outbox=events))

    def save_statuses(self, changes: list[tuple[TaskRecord, TaskStatus]],
                      saved: Callable[[list[TaskRecord]], None] = lambda records: None
                      ) -> list[TaskRecord | ChangedSinceRead]:
        """`save_status` for many tasks, a transaction per table and partition (100 rows at
        most), the transactions at once: for each, the task as saved, or ChangedSinceRead. A
        transaction refused (a row changed since) is done again row by row. `saved` is given
        each transaction's tasks as saved, in this thread, as soon as the transaction is done
        (waiting for those before it let a worker claim and complete a task before its pending
        event was out, and its resolution waited a minute for the claim sweep)."""
        prepared = []
        for record, status in changes:
            columns, events = self._status_change(record, status)
            prepared.append(({**row_keys(status.task_id), **columns}, record, status, events))
        by_partition: dict[tuple[int, str], list] = {}
        for change in prepared:
            by_partition.setdefault(_place(change[0]), []).append(change)
        chunks = [same[start:start + MAX_BATCH] for same in by_partition.values()
                  for start in range(0, len(same), MAX_BATCH)]
        outcomes: dict[str, TaskRecord | ChangedSinceRead] = {}
        done = [self._save_chunk(chunks[0])] if len(chunks) == 1 else (
            future.result() for future in as_completed([TASK_SAVES.submit(self._save_chunk, chunk)
                                                         for chunk in chunks]))
        for chunk in done:   # each as soon as it lands: its tasks may be claimed from then on
            saved([record for record in chunk.values() if isinstance(record, TaskRecord)])
            outcomes.update(chunk)
        return [outcomes[status.task_id] for _, status in changes]

    def _save_chunk(self, chunk: list[tuple]) -> dict[str, TaskRecord | ChangedSinceRead]:
        """One partition's status changes in one transaction, or row by row if it is refused."""
        answers, refusal = None, None
        try:
            answers = self.table_of(chunk[0][1].task_id).submit_transaction([
                ("update", entity, {"etag": record.etag, "match_condition": MatchConditions.IfNotModified,
                                    "mode": UpdateMode.MERGE})
                for entity, record, _, _ in chunk]) if len(chunk) > 1 else None
        except TableTransactionError as error:
            refusal = error
        if answers is not None:
            return {status.task_id: self._wrote(replace(record, status=status, etag=answer.get("etag"), outbox=events))
                    for (_, record, status, events), answer in zip(chunk, answers)}
        outcomes: dict[str, TaskRecord | ChangedSinceRead] = {}
        for entity, record, status, events in chunk:
            self.marks.refused(events, refusal, record.outbox)   # written again below, with events of their own
            try:
                outcomes[status.task_id] = self.save_status(record, status)
            except ChangedSinceRead as refused:
                outcomes[status.task_id] = refused
        return outcomes

    def save_dependents(self, record: TaskRecord) -> TaskRecord:
        """Write `record`'s dependents (those listed, and whether the table holds more), if
        the row is still as this version of it was read; else ChangedSinceRead."""
        columns = _dependents_columns(record.dependents, record.more_dependents)
        return self._wrote(replace(record, etag=self._merge(record, columns)))

    def _merge(self, record: TaskRecord, columns: dict) -> str | None:
        """Merge `columns` into the row if it is still as `record` read it; its new ETag. Else
        ChangedSinceRead, and the remembered version is dropped."""
        try:
            meta = lost_responses.update(self.table_of(record.task_id), {**row_keys(record.task_id), **columns},
                                         record.etag)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            self._recent.forget(record.task_id)
            raise ChangedSinceRead(record.task_id) from exc
        return meta.get("etag")

    def last_written(self, task_id: str, with_definition: bool = False) -> TaskRecord | None:
        """The row as this process last wrote it, if it remembers it: possibly no longer the
        row's current version, so only to try a conditional write from (see `recent_writes`)."""
        record = self._recent.get(task_id)
        if record is None or (with_definition and record.definition is None):
            return None
        return record

    def _wrote(self, record: TaskRecord) -> TaskRecord:
        remembered = record
        if record.definition is None:   # a definition never changes: keep the one remembered
            before = self._recent.get(record.task_id)
            if before is not None and before.definition is not None:
                remembered = replace(record, definition=before.definition, definition_chars=before.definition_chars)
        elif record.definition_chars > REMEMBERED_DEFINITION_CHARS:
            remembered = replace(record, definition=None)
        self._recent.wrote(record.task_id, remembered)
        return record

    def _events(self, task_id: str, summary: dict, notice: dict, before: TaskStatus | None, after: TaskStatus,
                held: tuple[Event, ...]) -> tuple[Event, ...]:
        """The outbox to write with a change: what the row `held` and is not known to be out
        yet, and the change's own events (see `publication_marks`)."""
        if not self.events:
            return ()
        return self.marks.prepare(self, task_id, held + tuple(
            task_events.task_changed(summary, notice, before, after, to_iso(utcnow()))))

    def load_outbox(self, task_id: str) -> tuple[tuple[Event, ...], str] | None:
        return outbox.load(self.table_of(task_id), *_key(task_id))

    def clear_outbox(self, task_id: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None:
        self._recent.outbox_cleared(task_id, outbox.clear(self.table_of(task_id), *_key(task_id), published,
                                                                      etag, kept))

    def delete_many(self, task_ids: list[str]) -> None:
        """Delete tasks' rows, a transaction per partition (rows gone already are no error)."""
        for task_id in task_ids:
            self._recent.forget(task_id)
        for table, same in self._tables.split(task_ids, lambda task_id: task_id):
            delete_in_batches(table, [_key(task_id) for task_id in same])

    def table_of(self, task_id: str) -> Table:
        """The table that holds the task's row."""
        return self._tables.of(task_id)


def task_tables(account: StorageAccount) -> TableShards:
    """The tables of task rows, `Tasks00` to `Tasks07` (see the module's docstring)."""
    return TableShards(account, "Tasks", TABLES, _table_number)


def _table_number(task_id: str) -> int:
    """The table of a task's row (see the module's docstring)."""
    return SLUGID_CHARACTERS.find(task_id[1:2]) % TABLES


def _place(entity: dict) -> tuple[int, str]:
    """Where a row is: its table and partition (what one transaction may hold)."""
    return _table_number(entity["RowKey"]), entity["PartitionKey"]


def _key(task_id: str) -> tuple[str, str]:
    """The task row's (PartitionKey, RowKey)."""
    return task_id[:PARTITION_CHARS], task_id


def row_keys(task_id: str) -> dict:
    """The task row's keys as entity columns."""
    partition, row = _key(task_id)
    return {"PartitionKey": partition, "RowKey": row}


def _chunks(rows: list[tuple[dict, TaskRecord]]) -> list[list[tuple[dict, TaskRecord]]]:
    """New rows grouped by table and partition, at most MAX_BATCH and BATCH_CHARS of definitions each."""
    by_partition: dict[tuple[int, str], list] = {}
    for row in rows:
        by_partition.setdefault(_place(row[0]), []).append(row)
    chunks = []
    for partition_rows in by_partition.values():
        chunk, chars = [], 0
        for row in partition_rows:
            if chunk and (len(chunk) == MAX_BATCH or chars + row[1].definition_chars > BATCH_CHARS):
                chunks.append(chunk)
                chunk, chars = [], 0
            chunk.append(row)
            chars += row[1].definition_chars
        chunks.append(chunk)
    return chunks


def _dependents_columns(dependents: tuple[Dependent, ...], more: bool) -> dict:
    return {DEPENDENTS: json.dumps([dependent.to_json() for dependent in dependents], separators=(",", ":")),
            MORE_DEPENDENTS: more}


def _record(task_id: str, entity, with_definition: bool) -> TaskRecord:
    definition, definition_chars = None, 0
    if with_definition:
        encoded = long_text.from_columns("definition", entity)
        definition, definition_chars = json.loads(encoded), len(encoded)
        definition["priority"] = entity["priority"]   # changeTaskPriority writes only the column
    status = TaskStatus(
        task_id=task_id,
        retries=entity["retries"],
        retries_left=entity["retriesLeft"],
        deadline=entity["deadline"],
        runs=tuple(Run.from_json(run) for run in json.loads(entity["runs"])),
    )
    summary = {name: entity[name] for name in SUMMARY_FIELDS}
    notice = json.loads(long_text.from_columns("notice", entity)) if entity.get("noticeChunks") else {}
    dependents = tuple(Dependent.from_json(value) for value in json.loads(entity.get(DEPENDENTS) or "[]"))
    rows = tuple(json.loads(entity[DEPENDENCY_ROWS])) if entity.get(DEPENDENCY_ROWS) is not None else None
    sole = tuple(json.loads(entity[SOLE_DEPENDENCY])) if entity.get(SOLE_DEPENDENCY) is not None else None
    return TaskRecord(summary, status, definition, entity.metadata.get("etag"), notice, outbox.from_entity(entity),
                      definition_chars, dependents, entity.get(MORE_DEPENDENTS) is not False, rows, sole)
