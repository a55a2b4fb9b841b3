"""Task groups: membership, the group's schedulerId and expiry, sealing, resolution, and listing.

A group's events (task-group-resolved, task-group-sealed) are written with the change they
announce, in the group row's outbox, and published right after it (see `event_publisher`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Callable

from shared.runtime.thread_pools import GROUP_PRIORITIES
from shared.domain import group_watch, task_events
from shared.domain.errors import Conflict, NotFound
from shared.domain.task_status import render_status
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.patterns.buckets import WIDE
from shared.storage.errors import AlreadyExists, Closed
from shared.storage.tables.task_group_table import FirstResolution, TaskGroupRecord, TaskGroupTable
from shared.storage.tables.task_table import TaskTable
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.services.event_publisher import EventPublisher

READ_PAGE = 1000   # members read at once when a whole group is walked
# A group shared by tasks is kept this much past the expiry that extended it (Taskcluster's
# queue bumps it by an hour too): clients stamp each task afresh, each expiring a moment after
# the one before, and without the step every createTask wrote the group's row before joining.
# A group made for one task (`lone`) keeps that task's expiry: it goes with it.
EXPIRY_STEP = timedelta(hours=1)
# A group known to this process is taken as it is (but for a seal, found when its members are
# added) unless its expiry is this near: once that passes it may be deleted and made anew.
TRUST_BEFORE_EXPIRY = EXPIRY_STEP + timedelta(hours=1)
Authorize = Callable[[TaskGroupRecord], None] | None   # the caller's scope check on the group as read


class TaskGroups:
    def __init__(self, group_table: TaskGroupTable, task_table: TaskTable, publisher: EventPublisher) -> None:
        self.group_table = group_table
        self.task_table = task_table
        self.publisher = publisher

    def check(self, definitions: dict[str, dict], accepted: bool = False) -> dict[str, TaskGroupRecord | None]:
        """Refuse, before anything is written, new tasks their groups would refuse; the
        groups as read (None: not created yet), for `join_many`. `accepted`: the tasks were
        accepted before (the parts of a graph whose PUT was answered), so a seal since then
        does not refuse them."""
        groups = {}
        for group_id, task_ids in _by_group(definitions).items():
            group = groups[group_id] = self._trusted(group_id) or self.group_table.load(group_id)
            scheduler_id = group.scheduler_id if group else definitions[task_ids[0]]["schedulerId"]
            sealed = group.sealed if group and not accepted else ""
            _check_members(group_id, scheduler_id, sealed, definitions, task_ids)
        return groups

    def makes(self, definitions: dict[str, dict]) -> bool:
        """Whether `definitions` is one task in the group of its own id (Taskcluster's default
        for a task given no group), which this process does not know: such a group is new but
        for a retry, and `make` tries it so."""
        if len(definitions) != 1:
            return False
        (task_id, definition), = definitions.items()
        return definition["taskGroupId"] == task_id and self._trusted(task_id) is None

    def make(self, definitions: dict[str, dict]) -> bool:
        """For the task of `makes`: its `lone` group's row and its membership, in one
        transaction (nothing can refuse a new group); False, writing nothing, if either
        exists: the task then joins the group as any task would (`check`, `join_many`)."""
        (definition,) = definitions.values()
        return self.group_table.insert_with_member(_fresh(definition, lone=True), definition) is not None

    def _trusted(self, group_id: str) -> TaskGroupRecord | None:
        """The group as this process last wrote or read it, unless its expiry is near. Its
        `resolved` and `sealed` only move forward while it lives: a version that has them
        set is as far as the row got, or behind it."""
        known = self.group_table.last_known(group_id)
        if known is not None and parse_iso(known.expires) > utcnow() + TRUST_BEFORE_EXPIRY:
            return known
        return None

    def join_many(self, definitions: dict[str, dict], known: dict[str, TaskGroupRecord | None],
                  accepted: bool = False) -> set[str]:
        """Make new tasks members of their groups, creating groups or extending their expiry;
        `known` are the groups as `check` found them. Returns the tasks that were members
        already (a create done before, entirely or in part).

        A group's schedulerId is fixed by its first task, and a sealed group takes no more
        (but those `accepted` before it was sealed): a seal after the version `check` knew
        is found when the members are added (see `TaskGroupTable.add_members`).
        """
        members_before: set[str] = set()
        for group_id, task_ids in _by_group(definitions).items():
            expires = max(definitions[task_id]["expires"] for task_id in task_ids)
            group = known.get(group_id) or self._ensure(definitions[task_ids[0]])
            joined = task_ids != [group_id]   # a task other than the one of the group's id
            while True:
                _check_members(group_id, group.scheduler_id, "" if accepted else group.sealed, definitions, task_ids)
                if self._extend_expiry(group, expires, joined) is not None:
                    break
                group = self._ensure(definitions[task_ids[0]])   # gone since it was known: made anew
            try:
                members_before |= self.group_table.add_members(
                    group_id, {task_id: definitions[task_id] for task_id in task_ids}, refuse_sealed=not accepted)
            except Closed:
                sealed = self.group_table.load(group_id)
                raise Conflict(f"Task group {group_id} was sealed at {sealed.sealed if sealed else 'a moment ago'}; "
                               "no tasks can be added") from None
        return members_before

    def withdraw(self, task_id: str, definition: dict) -> None:
        """Take back a new task's membership: its taskId turned out to be another group's task."""
        self.group_table.withdraw_member(definition["taskGroupId"], task_id, definition["deadline"])

    def adopt(self, known: dict[str, TaskGroupRecord | None]) -> None:
        """Before a graph's rows are written in groups that exist (as `check` found them): a
        `lone` one (made for one task) is lone no more, so that its expiry deletes the graph
        with it (see `TaskExpiry`), even if none of the graph's tasks ever joins it."""
        for group in known.values():
            if group is not None and group.lone:
                self._extend_expiry(group, group.expires, joined=True)

    def make_wide(self, definition: dict) -> None:
        """Make the group of a large graph's tasks (this is one of them) before any of its
        members, with wide buckets (see `buckets`); a group that exists keeps its width."""
        self._ensure(definition, WIDE)

    def _ensure(self, definition: dict, bucket_width: int = 1, lone: bool = False) -> TaskGroupRecord:
        fresh = _fresh(definition, bucket_width, lone)
        try:
            return self.group_table.insert(fresh)
        except AlreadyExists:
            return self.group_table.load(fresh.task_group_id)

    def _extend_expiry(self, group: TaskGroupRecord, expires: str, joined: bool = False) -> TaskGroupRecord | None:
        """The group, its expiry made at least `expires`, and no longer `lone` if another
        task `joined`; None if it is gone."""
        def later(record: TaskGroupRecord) -> TaskGroupRecord:
            if joined and record.lone:   # shared from now on: a step past its tasks' expiry, as it showed
                record = replace(record, expires=shown_expires(record), lone=False)
            if parse_iso(record.expires) < parse_iso(expires):
                record = replace(record, expires=_stepped(expires))
            return record
        return change_until_saved(lambda: self.group_table.load(group.task_group_id), later, self.group_table.save, first=group)

    def member_resolved(self, task_group_id: str, task_id: str, first: FirstResolution) -> bool:
        """Note that a member resolved (`first`: as it was then, for its deadline row); True
        when that made the whole group resolved (the group's resolved time only moves
        forward, so noting it twice is once).

        The task of a `lone` group (one made for the task given no other group, Taskcluster's
        default) is its only member: its bucket's count says whether the group is resolved,
        without the query over every bucket (which Azurite answers by scanning the table).
        Another task joins such a group only after taking `lone` off its row, and the group
        is marked resolved conditionally on the version that still said `lone`: in the
        transaction that counts the task out when this process knows the row and the count
        as they are (`_resolved_with_member`), else one step after the other."""
        known = self._trusted(task_group_id)
        alone = task_id == task_group_id and known is not None and known.lone
        if alone and self._resolved_with_member(known, first):
            return True
        return not self.group_table.member_resolved(task_group_id, task_id, first, alone) \
            and self._resolved(task_group_id, first.resolved, alone)

    def _resolved_with_member(self, known: TaskGroupRecord, first: FirstResolution) -> bool:
        """A `lone` group's only member resolved: the group marked resolved and announced in
        the transaction that counts the member out (they share a partition), if the row and
        the count are still as this process knows them; False, having written nothing, if not."""
        if known.resolved >= first.resolved or not known.etag:
            return False
        saved = self.group_table.resolve_with_member(self._marked_resolved(known, first.resolved), first)
        if saved is None:
            return False
        self.publisher.written(self.group_table, saved)
        return True

    def member_completed_label(self, task_group_id: str, task_id: str, first: FirstResolution) -> tuple[bool, bool]:
        """`member_resolved` for a graph's task that completed, whose label closes in the same
        transaction; whether that made the whole group resolved, and whether a label of the
        graph is open still."""
        members_left, labels_left = self.group_table.member_completed_label(task_group_id, task_id, first)
        return not members_left and self._resolved(task_group_id, first.resolved), labels_left

    def member_rerun(self, task_group_id: str, task_id: str, deadline: str) -> None:
        """Before a member is rerun: its deadline is decided by its row from now on."""
        self.group_table.member_rerun(task_group_id, task_id, deadline)

    def _resolved(self, task_group_id: str, resolved: str, alone: bool = False) -> bool:
        """No member is left unresolved (at `resolved`; `alone`: as the bucket of the group's
        only member said, which holds while the row says `lone`): note it on the group's row
        and announce it, once; True if this call did.

        The row is marked resolved at the moment of marking, not at the member's resolution:
        two last members resolving at once both find every count at zero, and the one marking
        second, whose resolution came before the first's mark (the first saw its count gone),
        finds the row resolved since and announces nothing. (Marked at their resolutions'
        times, the second's came after the first's mark and both announced: two
        task-group-resolved for one cancelTaskGroup, where Taskcluster sends one.)"""
        def mark(group: TaskGroupRecord) -> TaskGroupRecord:
            if group.resolved >= resolved:
                return group
            if alone and not group.lone and self.group_table.any_unresolved(task_group_id):
                return group    # joined since: the members' counts decide
            return self._marked_resolved(group, max(resolved, to_iso(utcnow())))
        # From the version this process knows (a refused write reads the row): one that says
        # resolved at or after this is right to change nothing, as the row says as much.
        return self._change(lambda: self.group_table.load(task_group_id), mark, first=self._trusted(task_group_id))

    def _marked_resolved(self, group: TaskGroupRecord, resolved: str) -> TaskGroupRecord:
        """The group's row resolved at `resolved`, announced; the watchdog's verdict is over
        too (in the same write: see `watchdog`)."""
        watch = group_watch.kept_on_resolution(group.watch)
        return self._announced(replace(group, resolved=resolved, watch=watch), task_events.group_resolved(
            group.task_group_id, group.scheduler_id, shown_expires(group), resolved, resolved, group.sealed))

    def _change(self, load: Callable[[], TaskGroupRecord | None],
                change: Callable[[TaskGroupRecord], TaskGroupRecord], first: TaskGroupRecord | None = None) -> bool:
        """Change the group's row and publish the events the change added; whether it changed.
        `first`: the row as known already, tried before a read."""
        return self.publisher.change(self.group_table, load, change, self.group_table.save, first)[1]

    def _announced(self, group: TaskGroupRecord, event: task_events.Event) -> TaskGroupRecord:
        return replace(group, outbox=group.outbox + (event,)) if self.publisher.publishing else group

    def get(self, task_group_id: str) -> dict:
        group = self.existing(task_group_id)
        out = {"taskGroupId": group.task_group_id, "schedulerId": group.scheduler_id, "expires": shown_expires(group)}
        if group.sealed:
            out["sealed"] = group.sealed
        return out

    def seal(self, task_group_id: str, now: str, authorize: Authorize = None) -> dict:
        """No task can join a sealed group; sealing twice keeps the first time."""
        def sealed(group: TaskGroupRecord) -> TaskGroupRecord:
            if group.sealed:
                return group
            return self._announced(replace(group, sealed=now), task_events.group_sealed(
                task_group_id, group.scheduler_id, shown_expires(group), now, now))
        self._change(lambda: self.existing(task_group_id, authorize), sealed)
        out = self.get(task_group_id)
        self.group_table.seal_members(task_group_id, out["sealed"])   # each time: a seal may have died before it
        return out

    def cancel(self, task_group_id: str, cancel_tasks: Callable[[list[str]], list[bool]],
               authorize: Authorize = None) -> dict:
        """Cancel every unresolved member of a sealed group, a page at a time; `cancel_tasks(ids)`
        says which it did."""
        if not self.existing(task_group_id, authorize).sealed:
            raise Conflict(f"Task group {task_group_id} must be sealed before it can be canceled")
        size, canceled, after = 0, [], ""
        while page := self.group_table.members(task_group_id, after, READ_PAGE):
            size += len(page)
            canceled += [task_id for task_id, done in zip(page, cancel_tasks(page)) if done]
            after = page[-1]
        return {"taskGroupId": task_group_id, "taskGroupSize": size, "cancelledCount": len(canceled),
                "taskIds": canceled}

    def change_priority(self, task_group_id: str, priority: str, change_task: Callable[[str], bool],
                        authorize: Authorize = None) -> dict:
        """Give every member `priority` (`change_task(id)` says if it did), then announce
        task-group-priority-changed on the group's row."""
        group = self.existing(task_group_id, authorize)
        changed, after = [], ""
        while page := self.group_table.members(task_group_id, after, READ_PAGE):
            changed += [task_id for task_id, done in zip(page, GROUP_PRIORITIES.map(change_task, page)) if done]
            after = page[-1]
        event = task_events.group_priority_changed(task_group_id, group.scheduler_id, priority, len(changed),
                                                   to_iso(utcnow()))
        self._change(lambda: self.group_table.load(task_group_id), lambda record: self._announced(record, event),
                     first=group)
        return {"taskGroupId": task_group_id, "schedulerId": group.scheduler_id, "newPriority": priority,
                "tasksAffected": len(changed), "taskIds": changed}

    def existing(self, task_group_id: str, authorize: Authorize = None) -> TaskGroupRecord:
        """The group, checked by `authorize(group)` (the caller's scope check) if given."""
        group = self.group_table.load(task_group_id)
        if group is None:
            raise NotFound(f"Task group {task_group_id} not found")
        if authorize is not None:
            authorize(group)
        return group

    def list(self, task_group_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listTaskGroup: a page of the group's tasks after `after`, and its last when more follow."""
        out = self.get(task_group_id)   # with `sealed` once sealed, as Taskcluster's listing
        tasks, last = self.page_of_tasks(self.group_table.members(task_group_id, after, limit + 1), limit)
        return {**out, **tasks}, last

    def recent(self, limit: int) -> dict:
        """The groups written to last, for people looking for theirs (not a Taskcluster call)."""
        return {"taskGroups": self.group_table.recent(limit)}

    def page_of_tasks(self, task_ids: list[str], limit: int) -> tuple[dict, str | None]:
        """`{tasks: [{task, status}]}` for one page of ids (limit + 1 given when there may be
        more), reading the tasks in parallel; and the page's last id when more follow."""
        page = task_ids[:limit]
        records = self.task_table.load_many(page, with_definition=True)
        out = {"tasks": [{"task": record.definition, "status": render_status(record.summary, record.status)}
                         for record in records if record is not None]}
        return out, page[-1] if len(task_ids) > limit else None


def _fresh(definition: dict, bucket_width: int = 1, lone: bool = False) -> TaskGroupRecord:
    """A new row for the group of a task (its first)."""
    expires = definition["expires"] if lone else _stepped(definition["expires"])
    return TaskGroupRecord(definition["taskGroupId"], definition["schedulerId"], expires,
                           bucket_width=bucket_width, lone=lone)


def shown_expires(group: TaskGroupRecord) -> str:
    """The group's `expires` as answers and events give it: Taskcluster's, a step past its
    tasks'. A `lone` group keeps its one task's own, to be deleted with it (see `TaskExpiry`)."""
    return _stepped(group.expires) if group.lone else group.expires


def _stepped(expires: str) -> str:
    """The expiry a shared group is given for tasks expiring at `expires` (see EXPIRY_STEP)."""
    return to_iso(parse_iso(expires) + EXPIRY_STEP)


def _by_group(definitions: dict[str, dict]) -> dict[str, list[str]]:
    by_group: dict[str, list[str]] = {}
    for task_id, definition in definitions.items():
        by_group.setdefault(definition["taskGroupId"], []).append(task_id)
    return by_group


def _check_members(group_id: str, scheduler_id: str, sealed: str, definitions: dict[str, dict],
                   task_ids: list[str]) -> None:
    for task_id in task_ids:
        if definitions[task_id]["schedulerId"] != scheduler_id:
            raise Conflict(f"Task group {group_id} has schedulerId {scheduler_id!r}; task "
                           f"{task_id} has schedulerId {definitions[task_id]['schedulerId']!r}")
    if sealed:
        raise Conflict(f"Task group {group_id} was sealed at {sealed}; no tasks can be added")
