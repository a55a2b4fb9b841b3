"""The TaskGroups table: each group's row, and its member rows in bucket partitions.

The group's row, RowKey "group": schedulerId, expires, sealed, resolved and the width of its
buckets (`bucketWidth`, fixed when the row is made; 1 when absent), and `lone` while the
group has had no member but the task of its id (see `TaskGroups`). Its partition is the
bucket of width 1 of that task (`group_partition`), so that a group made for a task given
no other group (Taskcluster's default) is made with the task's membership in one
transaction (`insert_with_member`), and is resolved with it in one too. Each task
of the group has a row "member.<taskId>", and "unresolved.<taskId>" until it first
resolves, in the group's bucket for the task (see `buckets`, so that no partition grows
with the group; a wide group's buckets are in the tables TaskGroupsW00 to W31, so that no
table grows with it either: see `BucketTables`): the group is resolved when no unresolved row is left, which the count of
them in each bucket (row "~unresolved", see `countdown`) tells without a query. A task's
member and unresolved rows are written together in one transaction with that count, which
a seal marks in every bucket (column `closed`), so that a member cannot join a sealed group
whatever version of its row the writer had read.

Each member also has a row "deadline.<deadline>.<taskId>" in its bucket, written with its
member row: its `expires` and whether it has dependencies, then `resolved` and `runs` merged
in by the transaction of its first resolution, and `rerun` once it is rerun. It is what the
deadline sweep reads (see `deadline_resolver`): a range of keys per group and second
of deadlines, which tells which tasks resolved in time and what their expiry needs, so a
task that resolved costs its deadline no read of its row.

A task graph is a group (its id is the group's), and its labels' rows of what is open are in
the same buckets: "open.<taskId>" while the label's task has not completed, "~label.<taskId>"
for each label ever opened (a completed label is never opened again), and their count
("~open"): every count at zero = finished. So a graph task's completion counts down its
membership and its label in one transaction.

The group's events (resolved, sealed) are written with the change they announce, in the
group row's outbox columns (see `outbox`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from itertools import groupby

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.domain.task_events import Event
from shared.storage.client import lost_responses
from shared.storage.outbox import outbox
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import MAX_BATCH, delete_row
from shared.storage.patterns.buckets import IN_BUCKETS, BucketTables, bucket, bucket_owner, bucket_range
from shared.storage.patterns.countdown import Countdown
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.queries import first_rows, row_or_none
from shared.storage.patterns.recent_writes import RecentWrites

GROUP_ROW = "group"
MEMBER_PREFIX = "member."
UNRESOLVED_PREFIX = "unresolved."  # members that have not resolved even once yet
OPEN_PREFIX = "open."              # a graph's labels whose task has not completed yet
LABEL_MARKER = "~label."           # a graph's labels ever opened
DEADLINE_PREFIX = "deadline."      # a member by its deadline: what the deadline sweep reads
WIDTHS_REMEMBERED = 65_536         # groups whose bucket width this process remembers


def group_partition(task_group_id: str) -> str:
    """The partition of the group's row: the bucket of width 1 of the task of the group's id
    (a wide group's buckets are in other tables: no row of its buckets shares it)."""
    return bucket(task_group_id, task_group_id)


@dataclass(frozen=True)
class DeadlineRow:
    """A member's deadline row, as the deadline sweep reads it."""
    task_id: str
    deadline: str
    expires: str
    plain: bool           # it has no dependencies (so nothing of them to delete when it expires)
    resolved: str = ""    # when it first resolved, if it did
    runs: int = 0         # its runs then
    rerun: bool = False   # rerun since: its row decides


@dataclass(frozen=True)
class TaskGroupRecord:
    task_group_id: str
    scheduler_id: str
    expires: str
    sealed: str = ""
    resolved: str = ""   # when every member had resolved at least once (last time it happened)
    etag: str | None = None
    outbox: tuple[Event, ...] = ()   # events not published yet
    bucket_width: int = 1            # see `buckets`
    watch: str = ""                  # what the watchdog found at its last look, as JSON ("": nothing)
    on_stall: str = ""               # what the watchdog does with the group once stalled ("": report)
    lone: bool = False               # made for the task of its id, and no other task has joined since

    @property
    def key(self) -> str:
        return self.task_group_id


class TaskGroupTable:
    def __init__(self, account: StorageAccount, marks: PublicationMarks | None = None) -> None:
        self._buckets = BucketTables(account, "TaskGroups")   # a wide group's buckets are spread
        self._table = self._buckets.table
        self._unresolved = Countdown(self._table, UNRESOLVED_PREFIX, "unresolved", marker=MEMBER_PREFIX,
                                     spread=self._buckets)
        self.open_labels = Countdown(self._table, OPEN_PREFIX, "open", marker=LABEL_MARKER,  # see TaskGraphTable
                                     spread=self._buckets)
        self.marks = marks or PublicationMarks(account)
        self._recent: RecentWrites[TaskGroupRecord] = RecentWrites(size=4096)
        # A group's width never changes while its row lives, so it is remembered longer than
        # the row (a completion of a member asks for it; the group row is not read for that).
        self._widths: RecentWrites[int] = RecentWrites(size=WIDTHS_REMEMBERED)

    def insert(self, group: TaskGroupRecord) -> TaskGroupRecord:
        carried, group = group.outbox, self._prepared(group)
        try:
            meta = lost_responses.insert(self._table, self._entity(group))
        except ResourceExistsError as exc:
            self.marks.refused(group.outbox, exc, carried)
            raise AlreadyExists(group.task_group_id) from exc
        return self._remember(replace(group, etag=meta.get("etag")))

    def insert_with_member(self, group: TaskGroupRecord, definition: dict) -> TaskGroupRecord | None:
        """A new group's row (buckets of width 1, no events) with the membership of the task
        of its id, whose `definition` is given, in one transaction; None, writing nothing, if
        the row or the membership exists (a retry, or a group others made)."""
        task_id = group.task_group_id
        written = self._unresolved.add_new(task_id, task_id, [("create", self._entity(group))],
                                           beside=_member_rows({task_id: definition})[task_id])
        if written is None:
            return None
        return self._remember(replace(group, etag=written[0].get("etag")))

    def load(self, task_group_id: str) -> TaskGroupRecord | None:
        entity = row_or_none(self._table, group_partition(task_group_id), GROUP_ROW)
        if entity is None:
            self._recent.forget(task_group_id)
            return None
        return self._remember(TaskGroupRecord(
            task_group_id, entity["schedulerId"], entity["expires"], entity.get("sealed", ""),
            entity.get("resolved", ""), entity.metadata.get("etag"), outbox.from_entity(entity),
            entity.get("bucketWidth") or 1, entity.get("watch") or "", entity.get("onStall") or "",
            bool(entity.get("lone"))))

    def last_known(self, task_group_id: str) -> TaskGroupRecord | None:
        """The group's row as this process last wrote or read it, if it remembers it: its
        schedulerId never changes and its expiry only grows, but it may have been sealed
        since (which `add_members` finds) and it is deleted once its expiry passed."""
        return self._recent.get(task_group_id)

    def save(self, group: TaskGroupRecord) -> TaskGroupRecord:
        carried, group = group.outbox, self._prepared(group)
        try:
            meta = lost_responses.update(self._table, self._entity(group), group.etag)
        except (ResourceModifiedError, ResourceNotFoundError) as exc:
            self.marks.refused(group.outbox, exc, carried)
            self._recent.forget(group.task_group_id)
            raise ChangedSinceRead(group.task_group_id) from exc
        return self._remember(replace(group, etag=meta.get("etag")))

    def _remember(self, group: TaskGroupRecord) -> TaskGroupRecord:
        self._recent.wrote(group.task_group_id, group)
        self._widths.wrote(group.task_group_id, group.bucket_width)
        return group

    def width(self, task_group_id: str) -> int:
        """The width of the group's buckets: remembered, or read from its row (1 when there is
        no row: nor are there member rows). Remembered until the group is forgotten here; a
        group deleted by another process and made anew under the same id with another width
        (a large graph's, after the first expired) would be misread by this one."""
        return self._width_if_any(task_group_id) or 1

    def _width_if_any(self, task_group_id: str) -> int | None:
        """The width of the group's buckets, as `width` says; None when it has no row."""
        width = self._widths.get(task_group_id)
        if width is None:
            group = self.load(task_group_id)
            width = group.bucket_width if group else None
        return width

    def _prepared(self, group: TaskGroupRecord) -> TaskGroupRecord:
        """The group with the outbox to write (see `publication_marks`)."""
        return replace(group, outbox=self.marks.prepare(self, group.task_group_id, group.outbox))

    def load_outbox(self, task_group_id: str) -> tuple[tuple[Event, ...], str] | None:
        return outbox.load(self._table, group_partition(task_group_id), GROUP_ROW)

    def clear_outbox(self, task_group_id: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None:
        self._recent.outbox_cleared(task_group_id, outbox.clear(
            self._table, group_partition(task_group_id), GROUP_ROW, published, etag, kept))

    def add_members(self, task_group_id: str, definitions: dict[str, dict], refuse_sealed: bool = True) -> set[str]:
        """Member, unresolved and deadline rows of new tasks (taskId -> definition), each
        task's in the same transaction, with its bucket's count of unresolved rows (see
        `countdown`: the member row is the marker, so a task that was a member before is not
        counted again). Closed if the group was sealed (unless not `refuse_sealed`: tasks
        accepted before the seal), found by the counts' marks (see `seal_members`), whatever
        this process knew of the group. Returns the tasks that were members already."""
        return self._unresolved.add(task_group_id, list(definitions), self.width(task_group_id),
                                    refuse_closed=refuse_sealed, beside=_member_rows(definitions))

    def withdraw_member(self, task_group_id: str, task_id: str, deadline: str) -> None:
        """Take back the rows `add_members` wrote for a task that turned out to be another
        group's (its taskId was taken): counted down first, then its marker and deadline row."""
        width = self.width(task_group_id)
        self._unresolved.remove(task_group_id, task_id, width)
        self._buckets.delete(width, [(bucket(task_group_id, task_id, width), key)
                                     for key in (MEMBER_PREFIX + task_id, _deadline_key(deadline, task_id))])

    def seal_members(self, task_group_id: str, sealed: str) -> None:
        """After the group's row was sealed: mark every bucket's count, so that a member
        added from a version of the group read before the seal is refused."""
        self._unresolved.close(task_group_id, sealed, self.width(task_group_id))

    def member_resolved(self, task_group_id: str, task_id: str, first: FirstResolution, alone: bool = False) -> bool:
        """A member resolved (its first resolution, noted on its deadline row; again: no
        change); whether a member has not resolved yet. `alone`: the member was the group's
        only one as far as the caller knows, so its bucket's count answers (the caller
        confirms it with the group's row: see `TaskGroups.member_resolved`)."""
        return self._unresolved.remove(task_group_id, task_id, self.width(task_group_id), first.noted(task_id),
                                       bucket_only=alone)

    def resolve_with_member(self, group: TaskGroupRecord, first: FirstResolution) -> TaskGroupRecord | None:
        """The first resolution of the task of a `lone` group's id, the group's only member,
        and the group's row changed to `group` (marked resolved, its event in the outbox),
        in one transaction conditional on the row's version as `group` has it; None, having
        written nothing, if it was refused (the row or the count changed since this process
        knew them)."""
        task_id = group.task_group_id
        carried, group = group.outbox, self._prepared(group)
        written = self._unresolved.remove_last(task_id, task_id, [(
            "update", self._entity(group), {"mode": UpdateMode.MERGE, "etag": group.etag,
                                            "match_condition": MatchConditions.IfNotModified})],
            beside=first.noted(task_id))
        if written is None:
            self.marks.refused(group.outbox, None, carried)
            self._recent.forget(task_id)
            return None
        return self._remember(replace(group, etag=written[-1].get("etag")))

    def member_completed_label(self, task_group_id: str, task_id: str, first: FirstResolution) -> tuple[bool, bool]:
        """A graph's task completed: its membership and its label counted down at once (see
        `Countdown.remove_with`); whether a member has not resolved yet, and whether a label
        of the graph is open still."""
        return self._unresolved.remove_with(self.open_labels, task_group_id, task_id, self.width(task_group_id),
                                            first.noted(task_id))

    def member_rerun(self, task_group_id: str, task_id: str, deadline: str) -> None:
        """A member is about to be rerun: from now on its deadline row leaves the decision to
        its task row (written before the rerun, so a crash cannot hide a rerun task's deadline)."""
        width = self.width(task_group_id)
        partition = bucket(task_group_id, task_id, width)
        self._buckets.of(partition, width).upsert_entity(
            {"PartitionKey": partition, "RowKey": _deadline_key(deadline, task_id), "rerun": True})

    def deadline_rows(self, task_group_id: str, start: str, end: str, limit: int) -> list[DeadlineRow]:
        """Up to `limit` of the group's deadline rows with deadlines in [start, end), in
        deadline order within each bucket."""
        rows = self._buckets.query(self.width(task_group_id), IN_BUCKETS + " and RowKey ge @start and RowKey lt @end",
                                   {**bucket_range(task_group_id), "start": DEADLINE_PREFIX + start,
                                    "end": DEADLINE_PREFIX + end}, limit,
                                   ["RowKey", "expires", "plain", "resolved", "runs", "rerun"])
        return [_deadline_row(row) for row in rows]

    def forget_members(self, members: list[tuple[str, str, str]]) -> None:
        """Delete expired (so resolved) members' rows, given as (taskGroupId, taskId,
        deadline or "" if not known), one transaction per bucket; their unresolved rows went
        when they resolved (one a crash left behind goes with the group, as does a deadline
        row whose deadline was not known). A group whose row is gone went whole, rows and all."""
        for group_id, same in groupby(sorted(members), key=lambda member: member[0]):
            width = self._width_if_any(group_id)
            if width is None:
                continue
            self._buckets.delete(width, [
                (bucket(group_id, task_id, width), key) for _, task_id, deadline in same
                for key in (MEMBER_PREFIX + task_id, *([_deadline_key(deadline, task_id)] if deadline else []))])

    def forget(self, task_group_id: str) -> None:
        """Delete whatever member rows (and a graph's open labels) are left, then the group's
        row (so a crash midway leaves a group that is found, and deleted, again)."""
        self._buckets.forget(task_group_id, self.width(task_group_id), but=GROUP_ROW)
        self._forget_known(task_group_id)
        delete_row(self._table, group_partition(task_group_id), GROUP_ROW)

    def forget_lone(self, group: TaskGroupRecord) -> bool:
        """Delete a `lone` group (as read: `group`) whole: its one member's rows share the
        group row's partition, so they and the row go in one transaction, conditional on the
        row as read. False, having deleted nothing, if it changed since (a task joined, its
        expiry moved): `forget` then, if it is still to go."""
        partition = group_partition(group.task_group_id)
        rows = first_rows(self._table, "PartitionKey eq @pk", {"pk": partition}, MAX_BATCH, ["RowKey"])
        if len(rows) == MAX_BATCH:   # more than one member's few rows: page by page, as any group
            return False
        try:
            self._table.submit_transaction(
                [("delete", {"PartitionKey": partition, "RowKey": row["RowKey"]}) for row in rows
                 if row["RowKey"] != GROUP_ROW] +
                [("delete", {"PartitionKey": partition, "RowKey": GROUP_ROW},
                  {"etag": group.etag, "match_condition": MatchConditions.IfNotModified})])
        except (TableTransactionError, ResourceModifiedError, ResourceNotFoundError):
            return False
        self._forget_known(group.task_group_id)
        return True

    def _forget_known(self, task_group_id: str) -> None:
        """What this process remembers of a group it deletes (its row, its width)."""
        self._recent.forget(task_group_id)
        self._widths.forget(task_group_id)

    def members(self, task_group_id: str, after: str, limit: int) -> list[str]:
        """Up to `limit` member task ids in key order, starting after task id `after`."""
        return self._buckets.first_keys(task_group_id, self.width(task_group_id), MEMBER_PREFIX, after, limit)

    def unresolved(self, task_group_id: str, limit: int = 1, after: str = "") -> list[str]:
        """Up to `limit` members that have not resolved once yet, in task id order after `after`."""
        return self._buckets.first_keys(task_group_id, self.width(task_group_id), UNRESOLVED_PREFIX, after, limit)

    def unresolved_totals(self, task_group_id: str) -> tuple[int, datetime | None]:
        """How many members have not resolved once yet, and when storage last counted one in
        or out (None: never), from the counts alone (see `Countdown.totals`)."""
        return self._unresolved.totals(task_group_id, self.width(task_group_id))

    def lone_totals(self, group: TaskGroupRecord) -> tuple[int, datetime | None]:
        """`unresolved_totals` of a group read `lone`: its only member's bucket answers (a
        task that joins takes `lone` off the row before its membership is written)."""
        return self._unresolved.bucket_totals(group.task_group_id, group.task_group_id)

    def any_unresolved(self, task_group_id: str) -> bool:
        return self._unresolved.left(task_group_id, self.width(task_group_id))

    def recent(self, limit: int, scan: int = 5000) -> list[dict]:
        """Up to `limit` groups' rows (taskGroupId, schedulerId, expires, sealed, resolved, and
        `changed`: when storage last wrote the row), newest first. Reads up to `scan` group rows
        across partitions: for a person's list of groups, not a hot path."""
        rows = first_rows(self._table, "RowKey eq @row", {"row": GROUP_ROW}, scan,
                          ["PartitionKey", "Timestamp", "schedulerId", "expires", "sealed", "resolved"])
        groups = [{"taskGroupId": bucket_owner(entity["PartitionKey"]), "schedulerId": entity["schedulerId"],
                   "expires": entity["expires"], "sealed": entity.get("sealed") or None,
                   "resolved": entity.get("resolved") or None, "changed": self._changed(entity)} for entity in rows]
        return sorted(groups, key=lambda group: group["changed"], reverse=True)[:limit]

    @staticmethod
    def _changed(entity) -> str:
        """When storage last wrote the row, as ISO text ('' where the account does not say)."""
        stamp = entity.metadata.get("timestamp")
        return stamp.isoformat() if hasattr(stamp, "isoformat") else str(stamp or "")

    @staticmethod
    def _entity(group: TaskGroupRecord) -> dict:
        return {"PartitionKey": group_partition(group.task_group_id), "RowKey": GROUP_ROW,
                "schedulerId": group.scheduler_id, "expires": group.expires, "sealed": group.sealed,
                "resolved": group.resolved, "bucketWidth": group.bucket_width, "watch": group.watch,
                "onStall": group.on_stall, "lone": group.lone, **outbox.to_columns(group.outbox)}


def _member_rows(definitions: dict[str, dict]) -> dict[str, dict]:
    """The deadline row of each new member (taskId -> definition), written with its membership."""
    return {task_id: {"RowKey": _deadline_key(definition["deadline"], task_id), "expires": definition["expires"],
                      "plain": not definition["dependencies"]} for task_id, definition in definitions.items()}


@dataclass(frozen=True)
class FirstResolution:
    """What a member's first resolution notes on its deadline row."""
    deadline: str
    resolved: str
    runs: int

    def noted(self, task_id: str) -> dict | None:
        if not self.deadline:   # not known (a resolution announced before deadline rows were)
            return None
        return {"RowKey": _deadline_key(self.deadline, task_id), "resolved": self.resolved, "runs": self.runs}


def _deadline_key(deadline: str, task_id: str) -> str:
    return f"{DEADLINE_PREFIX}{deadline}.{task_id}"


def _deadline_row(row) -> DeadlineRow:
    deadline, task_id = row["RowKey"][len(DEADLINE_PREFIX):].rsplit(".", 1)
    return DeadlineRow(task_id, deadline, row.get("expires") or "", bool(row.get("plain")),
                       row.get("resolved") or "", row.get("runs") or 0, bool(row.get("rerun")))
