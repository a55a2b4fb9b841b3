"""The TaskGraphs table: a partition per graph (PartitionKey = taskGraphId), and the graph's
buckets (see `buckets`) for the rows that come one per task, so that no partition grows
with the graph.

In the graph's partition, RowKeys:
- "graph": routing, state, the creation request's fingerprint, which labels block it, and
  the fingerprint of the extension whose tasks are being created, if one is;
- "part.<stage>.<number>": nodes of a new graph or an extension whose tasks are still to
  be created (see `graph_parts`), deleted once they exist; an extension's part says which
  extension it is of and whether its creation was begun;
- "extension.<fingerprint>": an extension begun (`progress` EXTENDING: a repeat resumes it)
  or applied (EXTENDED: a repeat is a no-op);
- "names.graph.<number>", "names.<fingerprint>.<number>": the labels the creation or an
  extension brought, up to NAMES_PER_ROW a row (an extension's check for labels already in
  the graph);
- "reuse.<fingerprint>": which labels of the creation or extension with that fingerprint
  reuse an indexed task (label -> [taskId, namespace]), kept once decided (see `reuse`).

The TaskGraphLabels table (its `W` tables for a wide graph's buckets, see `BucketTables`): a
row per label in the bucket of its task, RowKey = that taskId (a resolution goes from its
task to its label with one read), with the label, the taskIds it requires (up to 10,000 of 22
characters: numbered columns, see long_text; labels, up to 128 characters, would not fit),
reruns and reruns left.

In a table of their own: in TaskGraphs, every query of a graph's partition (its parts, its
label names: a few per part created) walked them all in Azurite, which answers a query by
evaluating it against every row of its table (3.3 ms a query beside the label rows of 30,000
tasks). A graph created before they moved has them in TaskGraphs, in the same buckets, two
rows a label ("label.<label>" with its taskId, "task.<taskId>" with its label): they are read
there when not found here (`legacy`), and written back there.

Which labels are open (their task has not completed) is counted in the buckets of the
graph's group, beside its members (see `task_group_table`): a graph task's completion
counts both down in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from itertools import groupby

from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

from shared.runtime.thread_pools import GRAPH_PART_WRITES
from shared.storage.patterns import long_text
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.tables.task_group_table import TaskGroupTable
from shared.storage.patterns.batches import delete_if_unchanged, delete_partition, upsert_in_tables
from shared.storage.patterns.buckets import IN_BUCKETS, BucketTables, bucket, bucket_range, forget_buckets
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.queries import EVERY_ROW, any_row, first_rows, row_or_none
from shared.storage.client.table import Table

EXTENDING, EXTENDED = "extending", "extended"
NAMES_PER_ROW = 2_000   # labels of up to 128 characters: 256,000 characters, a quarter of a row


@dataclass(frozen=True)
class GraphRecord:
    graph_id: str
    routing: str
    state: str
    fingerprint: str
    blocked_by: tuple[str, ...] = ()
    extension: str = ""       # the fingerprint of the extension being created, if one is
    etag: str | None = None


@dataclass(frozen=True)
class Part:
    """Nodes whose tasks are still to be created (see `graph_parts`)."""
    key: str                  # "<stage>.<number>": every part of a stage after every earlier one
    nodes: list[dict]
    extension: str            # the fingerprint of the extension it is of; "" for a new graph's
    begun: str                # when a creation of it began ("": not yet; it may have died midway)
    etag: str | None = None

    @property
    def stage(self) -> int:
        return part_stage(self.key)


@dataclass(frozen=True)
class LabelRecord:
    graph_id: str
    label: str
    task_id: str
    required_ids: tuple[str, ...]     # the taskIds of the labels it requires
    reruns: int
    reruns_left: int
    rerun_of_run: int = -1     # the last run whose failure was answered with a rerun
    etag: str | None = field(default=None, compare=False)
    legacy: bool = field(default=False, compare=False)   # its row is in TaskGraphs (see the module)


class TaskGraphTable:
    def __init__(self, account: StorageAccount, groups: TaskGroupTable) -> None:
        self._table = account.table("TaskGraphs")
        self._labels = BucketTables(account, "TaskGraphLabels")
        self._open_labels = groups.open_labels
        self._width = groups.width   # a graph's buckets are as wide as its group's (the same id)

    def insert_graph(self, graph: GraphRecord) -> GraphRecord:
        try:
            meta = lost_responses.insert(self._table, _graph_entity(graph))
        except ResourceExistsError as exc:
            raise AlreadyExists(graph.graph_id) from exc
        return replace(graph, etag=meta.get("etag"))

    def load_graph(self, graph_id: str) -> GraphRecord | None:
        row = self._get(graph_id, "graph")
        if row is None:
            return None
        return GraphRecord(graph_id, row["routing"], row["state"], row["fingerprint"],
                           tuple(json.loads(row["blockedBy"])), row.get("extension", ""), row.metadata.get("etag"))

    def save_graph(self, graph: GraphRecord) -> GraphRecord:
        return replace(graph, etag=self._save(_graph_entity(graph), graph.etag, graph.graph_id))

    def add_labels(self, labels: list[LabelRecord]) -> None:
        """Label rows, and an open row for each (counted, see `countdown`), written at once."""
        tables: dict[str, tuple] = {}   # table name -> (the table, its rows)
        opened = []
        for graph_id, same in groupby(sorted(labels, key=lambda r: r.graph_id), key=lambda r: r.graph_id):
            same, width = list(same), self._width(graph_id)
            for record in same:
                entity = _label_entity(record, width)
                table = self._labels.of(entity["PartitionKey"], width)
                tables.setdefault(table.table_name, (table, []))[1].append(entity)
            opened.append(GRAPH_PART_WRITES.submit(self._open_labels.add, graph_id, [record.task_id for record in same], width))
        upsert_in_tables(list(tables.values()))
        for future in opened:
            future.result()

    def load_label(self, graph_id: str, label: str, task_id: str | None = None) -> LabelRecord | None:
        """The label's row: read in its task's bucket, or looked for in every bucket of the
        graph when its taskId is not known (one query; a blocked graph's status)."""
        width = self._width(graph_id)
        if task_id is not None:
            partition = bucket(graph_id, task_id, width)
            row = row_or_none(self._labels.of(partition, width), partition, task_id)
            if row is not None:
                return _label(graph_id, row)
            row = row_or_none(self._table, partition, f"label.{label}")
        else:
            found = self._labels.query(width, IN_BUCKETS + " and label eq @label",
                                       {**bucket_range(graph_id), "label": label}, 1)
            if found:
                return _label(graph_id, found[0])
            found = first_rows(self._table, IN_BUCKETS + " and RowKey eq @row",
                               {**bucket_range(graph_id), "row": f"label.{label}"}, 1)
            row = found[0] if found else None
        return _label(graph_id, row, legacy=True) if row is not None else None

    def save_label(self, record: LabelRecord) -> LabelRecord:
        width = self._width(record.graph_id)
        entity = _label_entity(record, width, record.legacy)
        table = self._table if record.legacy else self._labels.of(entity["PartitionKey"], width)
        return replace(record, etag=self._save(entity, record.etag, record.label, table))

    def labels(self, graph_id: str) -> list[LabelRecord]:
        rows = self._labels.query(self._width(graph_id), IN_BUCKETS, bucket_range(graph_id), EVERY_ROW)
        found = [_label(graph_id, row) for row in rows]
        if not found:
            found = [_label(graph_id, row, legacy=True) for row in self._table.query_entities(
                IN_BUCKETS + " and RowKey gt 'label.' and RowKey lt 'label/'", parameters=bucket_range(graph_id))]
        return sorted(found, key=lambda record: record.label)

    def add_label_names(self, graph_id: str, source: str, labels: list[str]) -> None:
        """The labels the graph's creation (`source` "graph") or an extension (`source` its
        request's fingerprint) brings, kept together: an extension's clash check reads a row
        per NAMES_PER_ROW labels, not a row per label (Azurite scans the whole table for each
        page of those)."""
        rows = [{"PartitionKey": graph_id, "RowKey": f"names.{source}.{number:06d}",
                 **long_text.to_columns("names", json.dumps(labels[start:start + NAMES_PER_ROW]))}
                for number, start in enumerate(range(0, len(labels), NAMES_PER_ROW))]
        list(GRAPH_PART_WRITES.map(self._table.upsert_entity, rows))

    def label_names(self, graph_id: str, but: str = "") -> set[str]:
        """Every label of the graph, but those the extension with fingerprint `but` brought."""
        rows = self._table.query_entities("PartitionKey eq @pk and RowKey gt 'names.' and RowKey lt 'names/'",
                                          parameters={"pk": graph_id})
        names: set[str] = set()
        for row in rows:
            if not (but and row["RowKey"].startswith(f"names.{but}.")):
                names.update(json.loads(long_text.from_columns("names", row)))
        return names

    def label_of(self, graph_id: str, task_id: str) -> str | None:
        width = self._width(graph_id)
        partition = bucket(graph_id, task_id, width)
        row = row_or_none(self._labels.of(partition, width), partition, task_id) or \
            row_or_none(self._table, partition, f"task.{task_id}")
        return row["label"] if row is not None else None

    def any_open(self, graph_id: str) -> bool:
        return self._open_labels.left(graph_id, self._width(graph_id))

    def _any(self, graph_id: str, kind: str) -> bool:
        """Whether the graph has any row `<kind>.*` (one row read at most)."""
        return any_row(self._table, "PartitionKey eq @pk and RowKey gt @start and RowKey lt @end",
                       {"pk": graph_id, "start": f"{kind}.", "end": f"{kind}/"})

    def add_parts(self, graph_id: str, parts: list[tuple[int, list[dict]]], extension: str = "") -> None:
        """The parts of a graph or `extension` still to be created, each (its stage, its nodes
        as JSON), one row each (a part may hold up to a megabyte: one to a request)."""
        rows = [{"PartitionKey": graph_id, "RowKey": f"part.{stage:05d}.{number:06d}", "extension": extension,
                 "begun": "", **long_text.to_columns("nodes", json.dumps(nodes, separators=(",", ":")))}
                for number, (stage, nodes) in enumerate(parts)]
        list(GRAPH_PART_WRITES.map(self._table.upsert_entity, rows))

    def load_part(self, graph_id: str, key: str) -> Part | None:
        row = self._get(graph_id, f"part.{key}")
        if row is None:
            return None
        return Part(key, json.loads(long_text.from_columns("nodes", row)), row.get("extension", ""),
                    row.get("begun") or "", row.metadata.get("etag"))

    def begin_part(self, part: Part, graph_id: str, now: str) -> Part:
        """Mark the part's creation begun (or taken over, or still going on) at `now`: the
        part with its new ETag; ChangedSinceRead if it changed since `part` was read (another
        handler began it, or finished it)."""
        etag = self._save({"PartitionKey": graph_id, "RowKey": f"part.{part.key}", "begun": now}, part.etag, part.key)
        return replace(part, begun=now, etag=etag)

    def parts(self, graph_id: str) -> list[str]:
        """The keys of the parts not created yet, earliest stage first."""
        return [key for key, _ in self.part_marks(graph_id)]

    def part_marks(self, graph_id: str) -> list[tuple[str, str]]:
        """(key, when its creation was last marked begun, or "") of each part not created
        yet, earliest stage first."""
        rows = self._table.query_entities(
            "PartitionKey eq @pk and RowKey gt 'part.' and RowKey lt 'part/'", parameters={"pk": graph_id},
            select=["RowKey", "begun"])
        return sorted((row["RowKey"][len("part."):], row.get("begun") or "") for row in rows)

    def any_part(self, graph_id: str) -> bool:
        return self._any(graph_id, "part")

    def remove_part(self, part: Part, graph_id: str) -> None:
        """Delete the created part, unless it changed since `part` was read (ChangedSinceRead:
        another handler took it over, and will end it)."""
        delete_if_unchanged(self._table, graph_id, f"part.{part.key}", part.etag, part.key)

    def forget(self, graph_id: str) -> None:
        """Delete the graph's rows (its open labels go with its group's buckets)."""
        self._labels.forget(graph_id, self._width(graph_id))
        forget_buckets(self._table, graph_id)   # a graph's label rows from before they moved
        delete_partition(self._table, graph_id)

    def keep_reuse(self, graph_id: str, fingerprint: str, reused: dict[str, tuple[str, str]]) -> dict:
        """Keep the reuse decision of the request with `fingerprint` (label -> (taskId,
        namespace)), unless one was kept first: the decision kept, either way."""
        entity = {"PartitionKey": graph_id, "RowKey": f"reuse.{fingerprint}",
                  **long_text.to_columns("reused", json.dumps(reused, separators=(",", ":")))}
        try:
            lost_responses.insert(self._table, entity)
        except ResourceExistsError:
            return self.reuse_decision(graph_id, fingerprint)
        return {label: tuple(found) for label, found in reused.items()}

    def reuse_decision(self, graph_id: str, fingerprint: str) -> dict | None:
        row = self._get(graph_id, f"reuse.{fingerprint}")
        return _reused(row) if row is not None else None

    def reuse_decisions(self, graph_id: str) -> dict[str, dict]:
        """Every reuse decision kept for the graph, by fingerprint."""
        rows = self._table.query_entities("PartitionKey eq @pk and RowKey gt 'reuse.' and RowKey lt 'reuse/'",
                                          parameters={"pk": graph_id})
        return {row["RowKey"][len("reuse."):]: _reused(row) for row in rows}

    def mark_extension(self, graph_id: str, fingerprint: str, progress: str) -> None:
        self._table.upsert_entity({"PartitionKey": graph_id, "RowKey": f"extension.{fingerprint}",
                                   "progress": progress})

    def extension(self, graph_id: str, fingerprint: str) -> str | None:
        """How far the extension with this fingerprint got: EXTENDING, EXTENDED or None."""
        row = self._get(graph_id, f"extension.{fingerprint}")
        return row["progress"] if row is not None else None

    def _get(self, graph_id: str, row_key: str):
        return row_or_none(self._table, graph_id, row_key)

    def _save(self, entity: dict, etag: str | None, name: str, table: Table | None = None) -> str | None:
        try:
            meta = lost_responses.update(table or self._table, entity, etag)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            raise ChangedSinceRead(name) from exc
        return meta.get("etag")


def _graph_entity(graph: GraphRecord) -> dict:
    return {"PartitionKey": graph.graph_id, "RowKey": "graph", "routing": graph.routing, "state": graph.state,
            "fingerprint": graph.fingerprint, "blockedBy": json.dumps(list(graph.blocked_by)),
            "extension": graph.extension}


def _label_entity(record: LabelRecord, width: int, legacy: bool = False) -> dict:
    partition = bucket(record.graph_id, record.task_id, width)
    keys = ({"PartitionKey": partition, "RowKey": f"label.{record.label}", "taskId": record.task_id} if legacy
            else {"PartitionKey": partition, "RowKey": record.task_id, "label": record.label})
    return {**keys, **long_text.to_columns("requires", json.dumps(list(record.required_ids), separators=(",", ":"))),
            "reruns": record.reruns, "rerunsLeft": record.reruns_left, "rerunOfRun": record.rerun_of_run}


def _label(graph_id: str, row, legacy: bool = False) -> LabelRecord:
    label, task_id = (row["RowKey"][len("label."):], row["taskId"]) if legacy else (row["label"], row["RowKey"])
    return LabelRecord(graph_id, label, task_id, tuple(json.loads(long_text.from_columns("requires", row))),
                       row["reruns"], row["rerunsLeft"], row["rerunOfRun"], row.metadata.get("etag"), legacy)


def _reused(row) -> dict[str, tuple[str, str]]:
    return {label: tuple(found) for label, found in json.loads(long_text.from_columns("reused", row)).items()}


def part_stage(key: str) -> int:
    return int(key.split(".")[0])
