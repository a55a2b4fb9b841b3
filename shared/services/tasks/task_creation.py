"""createTask, for one task or a whole graph at once, through one code path.

Every check that can refuse a request (sizes, conflicting definitions, dependencies,
groups) runs first, in `prepare`, before anything is written: a refusal leaves no trace.
Then the order of writes, so that a crash at any point loses nothing:
1. group membership with the deadline rows (after the group's second of deadlines is
   indexed, see `deadline_resolver`, and the group for the watchdog, see `watchdog`: both
   beside the reads of `prepare`, or beside the membership of a task whose group is made
   with it, see `_make_and_join`, whose watchdog item may carry its deadline), dependency
   and requirement rows, and pending hints (all batched in single-partition transactions
   where the partition allows);
2. the task rows, which are what makes a task exist, each after the rows of its dependents
   in the batch (so no resolution can be handled before its dependents exist);
3. a re-check of dependencies outside the batch that may have resolved meanwhile (a
   delayed repair intent, sent in step 1, redoes it if this process dies first).
A retried create repeats steps 1-3 harmlessly: every write is an upsert or a conditional
insert, and an existing task with the same definition is the success answer. A task waiting
on one task at most is not read first (see `prepare`): the membership, or the row's insert,
finds a taskId used before. Each task row
is inserted with the events of its creation in its outbox, published right after; a retry
publishes again whatever an existing task's outbox still holds (the first attempt may have
died before publishing).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from shared.runtime.thread_pools import CREATION_STEPS, TASK_READS
from shared.domain import lifecycle, task_definition
from shared.domain.dependencies import Listing, insertion_waves
from shared.domain.errors import Conflict, InvalidInput
from shared.domain.task_definition import priority_rank
from shared.domain.task_status import TaskStatus, render_status
from shared.storage.errors import AlreadyExists
from shared.storage.tables.task_table import (MAX_DEFINITION_CHARS, MAX_NOTICE_CHARS, NewTask, TaskRecord, TaskTable,
                                  encode_definition, encode_notice)
from shared.runtime.concurrent_steps import at_once
from shared.services.dependencies.dependency_tracker import DependencyTracker, Registration
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.claims.task_queues import TaskQueues
from shared.services.tasks.task_updater import TaskUpdater
from shared.services.sweeps.deadline_resolver import DeadlineWatch
from shared.services.sweeps.watchdog import GroupWatch
from shared.services.dependencies.resolution_messages import ResolutionMessages
from shared.services.event_publisher import EventPublisher
from shared.services.claims.work_signal import WorkSignal

log = logging.getLogger("queue.tasks")


@dataclass(frozen=True)
class Plan:
    """A creation checked and ready to write."""
    order: list[str]                     # every taskId asked for
    existing: dict[str, TaskRecord]      # already created with the same definition
    new: dict[str, dict]                 # to create: taskId -> definition
    outside: dict[str, TaskRecord]       # dependencies of `new` outside the batch
    groups: dict                         # groupId -> the group as read (None: new)
    held: bool = False                   # create unscheduled, whatever the dependencies
    accepted: bool = False               # accepted before (with their graph): a seal since does not refuse them
    listing: Listing = Listing({}, {})   # who waits on whom, as the new rows list it
    unread: bool = False                 # whether `new` tasks exist is found by their membership (or row), not read
    satisfied: frozenset[str] = frozenset()   # dependencies known completed (with `held`: see `prepare`)
    making: bool = False                 # one task whose group is made with its membership (`TaskGroups.makes`)
    unborn: frozenset[str] = frozenset()  # dependencies not created yet, to be created listing their dependents


class TaskCreation:
    def __init__(self, task_table: TaskTable, updater: TaskUpdater, task_groups: TaskGroups, task_queues: TaskQueues,
                 dependency_tracker: DependencyTracker, deadline_watch: DeadlineWatch, group_watch: GroupWatch,
                 messages: ResolutionMessages, publisher: EventPublisher, signal: WorkSignal) -> None:
        self.deadline_watch = deadline_watch
        self.group_watch = group_watch
        self.task_table = task_table
        self.updater = updater
        self.messages = messages
        self.publisher = publisher
        self.signal = signal
        self.task_groups = task_groups
        self.task_queues = task_queues
        self.dependency_tracker = dependency_tracker

    def create(self, definitions: dict[str, dict], now: datetime) -> dict[str, dict]:
        """Create normalized `definitions` (taskId -> definition); statuses by taskId."""
        return self.carry_out(self.prepare(definitions), now)

    def prepare(self, definitions: dict[str, dict], unused_ids: bool = False, held: bool = False,
                accepted: bool = False, listing: Listing | None = None,
                satisfied: frozenset[str] = frozenset(), unborn: frozenset[str] = frozenset()) -> Plan:
        """Read and check everything; raise InvalidInput or Conflict, writing nothing.

        Tasks that exist with the same definition are answered as they are; a different
        definition under an existing taskId is a Conflict. `unused_ids`: the caller knows
        no task has these ids yet (a new graph's), so they are not read one by one; a
        concurrent creation of the same ones is still caught when the rows are inserted.
        `held`: one part of a new graph, whose dependencies were checked with the whole
        graph and are all the graph's own tasks, which cannot have run yet: the tasks are
        created unscheduled, waiting for them, until the graph starts. `accepted` (implied by
        `held`): the tasks were accepted with their graph or extension, so a seal of its group
        since then does not refuse them. `listing`: who waits on each task of a graph (or an
        extension) created part by part, these tasks and all the others; by default, who
        waits on whom in the batch. `satisfied`: with `held`, the dependencies outside the
        graph, which completed before it was accepted (the tasks it reuses). `unborn`:
        dependencies outside the batch that do not exist yet, checked with the tasks when
        their extension was accepted, and to be created listing them (see `graph_parts`):
        not read, and waited for.
        """
        accepted = accepted or held
        for task_id, definition in definitions.items():
            _check_size(task_id, definition)
        # Tasks waiting on one task at most are not read: their membership, written first,
        # tells whether they were created before (see `_create_new`); one listed on the task
        # it waits on under a taskId that another definition has is harmless (a resolution
        # checks the terms the row keeps, see `dependencies.terms_met`), and its TaskDependencies
        # row is taken back. A task waiting on several is read: a conflicting definition must
        # not write requirement rows (counts of what it waits for) under another task's id.
        unread = not unused_ids and all(len(set(definition["dependencies"])) <= 1
                                        for definition in definitions.values())
        listing = Listing.of(definitions) if listing is None else listing
        if unread and self.task_groups.makes(definitions):   # no group to read: see `_make_and_join`
            outside = self.dependency_tracker.check(definitions, unborn) if not held else {}
            return Plan(list(definitions), {}, definitions, outside, {}, held, accepted, listing, unread, satisfied,
                        making=True, unborn=unborn)
        # The three reads are independent: made at once, they cost one round trip of waiting.
        # Those with nothing to read are not made (each step handed to a thread costs time).
        reads = {"groups": lambda: self.task_groups.check(definitions, accepted=accepted)}
        if not (unused_ids or unread):
            reads["existing"] = lambda: self._existing(definitions)
        if not held and any(definition["dependencies"] for definition in definitions.values()):
            reads["outside"] = lambda: self.dependency_tracker.check(definitions, unborn)
        # The time index items that must precede the members' rows (their groups' seconds of
        # deadlines, and the groups for the watchdog), when this process has not written them
        # lately, go beside the reads: hints, which a refused creation leaves to come due on
        # rows that were never written, costing their sweep a look and nothing else.
        watches = {f"watch {number}": lambda watch=watch: watch.watch(definitions)
                   for number, watch in enumerate((self.deadline_watch, self.group_watch)) if watch.due(definitions)}
        found = dict(zip([*reads, *watches], at_once(CREATION_STEPS, [*reads.values(), *watches.values()],
                                                     settle=True)))
        existing, outside, groups = found.get("existing", {}), found.get("outside", {}), found["groups"]
        for outcome in (existing, *(found[name] for name in watches)):
            if isinstance(outcome, Exception):
                raise outcome
        if unread and isinstance(groups, Conflict):   # a sealed group: tasks made before it are answered
            existing, unread = self._existing(definitions), False
        new = {task_id: definition for task_id, definition in definitions.items() if task_id not in existing}
        if existing:  # tasks that exist are answered as they are: check only the others
            outside = {} if held else self.dependency_tracker.check(new, unborn)
            groups = self.task_groups.check(new, accepted=accepted)
        for checked in (outside, groups):
            if isinstance(checked, Exception):
                raise checked
        return Plan(list(definitions), existing, new, outside, groups, held, accepted, listing, unread, satisfied,
                    unborn=unborn)

    def carry_out(self, plan: Plan, now: datetime) -> dict[str, dict]:
        """Write a prepared creation; statuses by taskId."""
        statuses = self._answer_existing(plan.existing)
        if plan.new:
            statuses.update(self._create_new(plan, now))
        return {task_id: statuses[task_id] for task_id in plan.order}

    def _answer_existing(self, existing: dict[str, TaskRecord]) -> dict[str, dict]:
        """Statuses of tasks created before with the same definition; the events their
        outboxes still hold go out (their creator may have died before publishing)."""
        for record in existing.values():
            if record.outbox:
                self.publisher.everything(self.task_table, record)
        return {task_id: render_status(record.summary, record.status) for task_id, record in existing.items()}

    def _existing(self, definitions: dict[str, dict]) -> dict[str, TaskRecord]:
        """The tasks of `definitions` that exist; a Conflict if one has another definition."""
        return self._same_definitions(self._load(definitions), definitions)

    def _load(self, task_ids) -> dict[str, TaskRecord]:
        found = dict(zip(task_ids, TASK_READS.map(lambda task_id: self.task_table.load(task_id, True), task_ids)))
        return {task_id: record for task_id, record in found.items() if record is not None}

    @staticmethod
    def _same_definitions(records: dict[str, TaskRecord], definitions: dict[str, dict]) -> dict[str, TaskRecord]:
        for task_id, record in records.items():
            if not task_definition.same_definition(record.definition, definitions[task_id]):
                raise Conflict(f"Task {task_id} already exists with a different definition")
        return records

    def _create_new(self, plan: Plan, now: datetime) -> dict[str, dict]:
        new = plan.new
        statuses = {}
        answered = {}   # tasks found created before, by their membership (`plan.unread`)
        hints = {}      # taskId -> the hint written for its pending run

        def register_and_hint() -> Registration:   # the hints depend on what the registration finds
            registration = self.dependency_tracker.register_many(new, plan.outside, plan.held,
                                                           plan.listing.listed_by, plan.satisfied, plan.unread,
                                                           plan.unborn)
            for task_id, definition in new.items():
                status = TaskStatus.new(task_id, definition)
                ready = registration.ready[task_id] and not plan.held
                statuses[task_id] = lifecycle.schedule(status, now) if ready else status
            hints.update((hint.task_id, hint) for hint in self.updater.add_hints(
                [(new[task_id], task_id, status.latest) for task_id, status in statuses.items() if status.runs]))
            return registration
        def join() -> set[str]:
            return self.task_groups.join_many(new, plan.groups, accepted=plan.accepted)
        def withdraw_hints(task_ids, found: dict[str, TaskRecord]) -> None:
            """Hints this call wrote for tasks it does not create. One whose key the task's
            own pending run has (both creations stamped in the same millisecond) is that run's
            hint too: it stays."""
            for task_id in task_ids:
                ours = statuses.get(task_id)
                theirs = found.get(task_id)
                if ours is None or not ours.runs:
                    continue
                if theirs is not None and theirs.status.pending_run and _same_hint(
                        new[task_id], ours.latest, theirs.summary, theirs.status.latest):
                    continue
                self.updater.pending_removed(new[task_id], task_id, ours.latest)
        # The membership and the hints at once, the task rows after both: a pending task row
        # is never without its hint. Unread tasks (see `prepare`) learn from the membership
        # whether they were created before: the hints just written for those are taken back
        # (a claim that finds one first drops it: its run is not pending, or is another's).
        if plan.making:
            members_before, registration = self._make_and_join(plan, register_and_hint)
        else:
            members_before, registration = at_once(CREATION_STEPS, [join, register_and_hint], settle=True)
        try:
            if plan.unread and isinstance(members_before, Conflict):
                # Sealed since this process knew the group: tasks made before are answered.
                loaded = self._load(new)
                withdraw_hints(new, loaded)
                found = self._same_definitions(loaded, new)
                if set(found) != set(new):
                    raise members_before
                return self._answer_existing(found)
            for outcome in (members_before, registration):
                if isinstance(outcome, Exception):
                    raise outcome
            if plan.unread and members_before:
                # A member whose creator died before its row is not loaded: it is created now, hint and all.
                loaded = self._load({task_id: new[task_id] for task_id in members_before})
                withdraw_hints(loaded, loaded)
                answered = self._answer_existing(self._same_definitions(loaded, new))
                new = {task_id: definition for task_id, definition in new.items() if task_id not in answered}
                if not new:
                    return answered
        except Conflict:   # another definition has a taskId (or the group is sealed): nothing is created
            if isinstance(registration, Registration):
                self.dependency_tracker.withdraw(registration, new)
            raise
        records: dict[str, TaskRecord] = {}
        for wave in insertion_waves(new):  # dependents first: see insertion_waves
            records.update(self._insert_wave([
                _new_task(task_id, new[task_id], statuses[task_id], plan.listing, registration) for task_id in wave],
                registration))
        for task_id, intent in registration.recheck.items():
            # The row is read again only if the re-check scheduled the task: else it is as
            # inserted, or as a dependency's resolution made it a moment later (the answer is
            # then the state an instant before, as any answer may be). One answered as created
            # before (unread, see `prepare`) had its own creator's re-check.
            if task_id in records and self.dependency_tracker.recheck(
                    task_id, new[task_id], listening=registration.listening.get(task_id, frozenset())):
                records[task_id] = self.task_table.load(task_id)
            if intent is not None:
                self.messages.withdraw(intent)   # done: a dependency resolving from now on finds the task
        for queue_id in {definition["taskQueueId"] for definition in new.values()}:
            self.task_queues.seen(queue_id, max(d["expires"] for d in new.values() if d["taskQueueId"] == queue_id))
            made = [hints[task_id] for task_id, record in records.items()
                    if new[task_id]["taskQueueId"] == queue_id and task_id in hints and record.status.pending_run
                    and record.status.pending_run.scheduled == statuses[task_id].latest.scheduled]
            self.signal.notify(queue_id, sum(
                1 for task_id, record in records.items()
                if record.status.pending_run and new[task_id]["taskQueueId"] == queue_id), made=made)
        for task_id, definition in new.items():
            log.info("task %s created in group %s on %s (%s)", task_id, definition["taskGroupId"],
                     definition["taskQueueId"], records[task_id].status.state.value,
                     extra={"taskId": task_id, "action": "create"})
        return {**answered, **{task_id: render_status(record.summary, record.status)
                               for task_id, record in records.items()}}

    def _make_and_join(self, plan: Plan, register_and_hint) -> tuple[set[str] | Exception, Registration | Exception]:
        """A task in a group of its own id that this process does not know (`plan.making`):
        the group's row with the membership in one transaction, the hint and the watches'
        items at once; if the group or the membership existed, the task joins as any other
        (a Conflict if the group refuses it). The watches' items precede the task's row, as
        they must, but not its membership: that matters only for a membership whose creator
        died before the row, which in a new group nobody else is in holds nothing up (a
        retry completes the task). The group's watch item carries the task's deadline when
        it can (`GroupWatch.carried`): one index write instead of two."""
        carried = self.group_watch.carried(plan.new)

        def watch_made(new: dict[str, dict]) -> None:
            if set(carried) - set(self.group_watch.watch(new, carried, lone=True)):   # another thread indexed it first
                self.deadline_watch.watch(new)
        watches = [watch_made] if carried or self.group_watch.due(plan.new) else []
        if self.deadline_watch.due(plan.new) and not carried:
            watches.append(self.deadline_watch.watch)
        made, registration, *watched = at_once(CREATION_STEPS, [
            lambda: self.task_groups.make(plan.new), register_and_hint,
            *(lambda watch=watch: watch(plan.new) for watch in watches)], settle=True)
        for outcome in (made, *watched):
            if isinstance(outcome, Exception):
                raise outcome
        if made:
            return set(), registration
        try:
            groups = self.task_groups.check(plan.new, accepted=plan.accepted)
            return self.task_groups.join_many(plan.new, groups, accepted=plan.accepted), registration
        except Conflict as refused:
            return refused, registration

    def _insert_wave(self, tasks: list[NewTask], registration: Registration) -> dict[str, TaskRecord]:
        """Insert task rows, a transaction per partition; a row that exists already is the
        answer if its definition is the same (a concurrent create of the same task won the race).
        One of another definition took the taskId: the membership just written, if in another
        group, and the TaskDependencies rows `registration` added for it are taken back."""
        records = {}
        for task, outcome in zip(tasks, self.task_table.insert_many(tasks)):
            if isinstance(outcome, AlreadyExists):
                task_id = task.status.task_id
                record = self.task_table.load(task_id, with_definition=True)
                if not task_definition.same_definition(record.definition, task.definition):
                    if record.summary["taskGroupId"] != task.definition["taskGroupId"]:
                        self.task_groups.withdraw(task_id, task.definition)
                    self.dependency_tracker.withdraw(registration, [task_id])
                    raise Conflict(f"Task {task_id} already exists with a different definition") from None
                self.publisher.settle(self.task_table, record.task_id, record.outbox, record.etag)
            else:
                record = outcome
                self.publisher.written(self.task_table, record)
            records[record.task_id] = record
        return records


def _new_task(task_id: str, definition: dict, status: TaskStatus, listing: Listing,
              registration: Registration) -> NewTask:
    """A new task's row: its dependents as the listing has them on it (None there: more than
    its row lists, so the table holds them), and its dependencies that table rows hold it."""
    dependents = listing.dependents.get(task_id, ())
    return NewTask(definition, status, dependents or (), dependents is None,
                   tuple(registration.tabled.get(task_id, ())))


def _same_hint(summary: dict, run, other_summary: dict, other_run) -> bool:
    """Whether two pending runs' hints have one key (see `pending_table`)."""
    return (summary["taskQueueId"], priority_rank(summary["priority"]), run.scheduled, run.run_id) == (
        other_summary["taskQueueId"], priority_rank(other_summary["priority"]), other_run.scheduled, other_run.run_id)


def _check_size(task_id: str, definition: dict) -> None:
    size = len(encode_definition(definition))
    if size > MAX_DEFINITION_CHARS:
        raise InvalidInput(f"task {task_id}: the definition is {size} characters of JSON; at most "
                           f"{MAX_DEFINITION_CHARS} are allowed (move large data to artifacts)")
    notice = len(encode_notice(definition))
    if notice > MAX_NOTICE_CHARS:
        raise InvalidInput(f"task {task_id}: routes and tags are {notice} characters of JSON together; at most "
                           f"{MAX_NOTICE_CHARS} are allowed (every event carries them)")
