"""The dependency tracker: registering a new task's dependencies, and unblocking dependents
when a task resolves.

Who waits on a task is on its row, up to LISTED_DEPENDENTS of them (written with the row
when they are created together, or added by a conditional write before a later one is
created), so most resolutions find their dependents without a query; the others (a
fan-out's root, or one whose row had no room left) are in the TaskDependencies table, and
the row says so.

Invariants, kept in this order of writes:
- a dependent is on its dependency's row, or in the TaskDependencies table with the row
  saying so, before its own task row exists, so a resolution that happens while the
  dependent is being created either finds the dependent or is seen by the creator, which
  reads the dependency again after listing it; a dependency created after its dependent (a
  graph's parts, a batch's waves) is created listing it;
- a task waiting on one task outside its batch is read again once listed, before its row
  is written (`register_many`), unless it was listed on that task's row by a write
  conditional on the version read (or remembered: see `_known`), which was then current:
  resolved, the task is created scheduled; a resolution after that read finds the task
  listed, and schedules it if its row exists, or else sends a delayed intent to check it
  (`_satisfy`: its creator may die before the re-check it makes after the row, `recheck`,
  which only makes the rare race quick). A task waiting on several has its creator send
  that intent itself, before anything is written, and withdraw it after its re-check:
  reading them all before the row and again after would cost more. Its requirement rows
  are written before it is listed, so the re-check reads only the dependencies that did
  not list it by a write on a version that had not yet resolved (`Registration.listening`);
- a requirement row is deleted only when its dependency resolved in a way that satisfies
  it, and never comes back (a creator sent twice writes it once); the task is scheduled by
  whoever's deletion leaves its requirements' count at zero (scheduling is idempotent, so
  two finders do no harm); a task waiting on a single task has no requirement row, and is
  scheduled by that task's resolution (or its creator's re-check, which reads that task);
- handling a resolution twice, or late, changes nothing: resolved runs never change, and
  deleting a deleted requirement is a no-op;
- a task waiting on one task is scheduled from a listing only on the terms its own row keeps
  (`dependencies.terms_met`): such a task is created without reading whether its taskId
  exists, so a createTask refused for another definition may have listed it first. That
  creator keeps the task's own TaskDependencies row (it only adds a row where none is) and
  takes back the one it added (`withdraw`); listDependentTasks shows only tasks whose
  definition names the task.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Callable

from shared.runtime.thread_pools import DEPENDENCY_READS, DEPENDENTS
from shared.domain import lifecycle
from shared.domain.dependencies import (LISTED_DEPENDENTS, Dependent, dependencies_of, resolution_of, satisfies,
                                        terms_met)
from shared.domain.errors import Conflict, InputError
from shared.domain.runs import RunState
from shared.domain.timestamps import parse_iso, utcnow
from shared.storage.tables.dependency_table import DependencyTable
from shared.storage.client.message_queue import SentMessage
from shared.storage.tables.requirement_table import RequirementTable
from shared.storage.patterns.shared_reads import SharedReads
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.services.dependencies.resolution_messages import Resolution, ResolutionMessages
from shared.services.tasks.task_updater import TaskUpdater

log = logging.getLogger("queue.dependencies")
PAGE = 500
PROGRESS = "progress."   # expiry index items: how far a long fan-out got (no work for the sweep)
ALL_DONE = "~"           # sorts after every taskId ([A-Za-z0-9_-])
FIRST_CHECK = 32   # dependencies read before the first verdict on unknown ones


@dataclass
class Registration:
    ready: dict[str, bool]   # taskId -> no dependency left to wait for
    # tasks waiting on tasks outside the batch: re-check after insert, and the intent standing
    # for that re-check meanwhile (None: a task waiting on one task, which needs none)
    recheck: dict[str, SentMessage | None]
    # taskId -> its dependencies that keep a TaskDependencies row of it (none lists it)
    tabled: dict[str, list[str]] = field(default_factory=dict)
    # TaskDependencies rows this registration wrote itself, as (required, dependent) taskIds:
    # what `withdraw` takes back if the creation is refused (see `register_many`'s `unchecked`)
    added: list[tuple[str, str]] = field(default_factory=list)
    # taskId -> its dependencies whose resolution is sure to satisfy its requirement row: they
    # list it, by a write made after that row and on a version of theirs that had not yet
    # resolved so (the re-check need not read them)
    listening: dict[str, set[str]] = field(default_factory=dict)


class DependencyTracker:
    def __init__(self, task_table: TaskTable, dependency_table: DependencyTable, requirement_table: RequirementTable,
                 updater: TaskUpdater, expiries: TimeIndex, messages: ResolutionMessages) -> None:
        self.messages = messages   # intents to check a listed dependent not written yet
        self.expiries = expiries   # the expiration sweep's index, where a long fan-out notes its progress
        self.task_table = task_table
        self.dependency_table = dependency_table
        self.requirement_table = requirement_table
        self.updater = updater
        self._reads = SharedReads()

    def _known(self, task_id: str) -> TaskRecord | None:
        """A dependency as `check` takes it: as this process last wrote it, if it had not
        resolved then (a fan-in's dependencies are mostly tasks its creator's process has
        just made), else read. An old version does no harm: a task's definition (its expiry)
        never changes, and what `register_many` decides from its status is confirmed by the
        listing written conditionally on that version, or by a read after the listing."""
        remembered = self.task_table.last_written(task_id)
        if remembered is not None and not remembered.status.state.is_resolved:
            return remembered
        return self._load(task_id)

    def _load(self, task_id: str) -> TaskRecord | None:
        """A dependency's row, from a read that began after this call did, as a read of its
        own would: the creators of a fan-out's children (a decision task's 16 callers) ask
        for its root at once, twice each (the check, the re-check), and share the reads."""
        return self._reads.read(task_id, lambda: self.task_table.load(task_id))

    def check(self, definitions: dict[str, dict], unborn: frozenset[str] = frozenset()) -> dict[str, TaskRecord]:
        """The dependencies of new tasks (taskId -> definition) that lie outside the batch,
        read (or known: see `_known`) and checked: each must exist and must not expire before
        its dependent's deadline. Writes nothing, so a refusal leaves no trace. Those
        `unborn` (not created yet, checked with their extension) are not read."""
        outside = sorted({required for definition in definitions.values() for required in definition["dependencies"]
                          if required not in definitions and required not in unborn})
        records: dict[str, TaskRecord | None] = {}
        chunk = FIRST_CHECK
        while len(records) < len(outside):
            # Growing chunks: a request naming thousands of unknown tasks is refused after
            # reading a few, while a valid one is still read many at a time.
            ids = outside[len(records):len(records) + chunk]
            records.update(zip(ids, DEPENDENTS.map(self._known, ids)))
            _refuse_missing(records, len(outside))
            chunk *= 2
        _check_dependencies(definitions, records, unborn)
        return records

    def register_many(self, definitions: dict[str, dict], records: dict[str, TaskRecord],
                      unresolved: bool = False, listed_by: dict[str, frozenset[str]] | None = None,
                      satisfied: frozenset[str] = frozenset(), unchecked: bool = False,
                      unborn: frozenset[str] = frozenset()) -> Registration:
        """Record the dependencies of new tasks created together; `records` are their
        dependencies outside the batch, as `check` read them (those inside cannot have
        resolved yet). `listed_by`: for each new task, the tasks whose rows list it (created
        so: see `domain.dependencies.Listing`); its other dependencies get a TaskDependencies row, or, outside
        the batch and not resolved yet, list it on their rows if they have room.
        `unresolved`: every dependency is known not to have resolved (a part of a graph that
        has not started, whose dependencies' rows are created knowing their dependents), but
        those `satisfied`, known to have completed (tasks a graph reuses, see `reuse`).
        `unchecked`: whether the tasks exist was not read (each waits on one task at most, see
        `TaskCreation.prepare`): one may, with another definition, so the TaskDependencies
        rows of its own are kept, and those this call wrote are noted for `withdraw`; an
        entry it adds to a row is harmless (see `dependencies.terms_met`). `unborn`:
        dependencies outside the batch not created yet, which will be created listing their
        dependents (as those inside are): waited for, and not read again."""
        edges, outside, requirement_rows, alone, registration = [], [], [], [], Registration({}, {})
        listed_by = listed_by or {}

        def born(required: str) -> bool:   # exists outside the batch, so may have resolved
            return required not in definitions and required not in unborn
        for task_id, definition in definitions.items():
            dependent = Dependent.of(task_id, definition)
            waiting = []
            for required in dependencies_of(definition):
                waits = required not in satisfied and (unresolved or not born(required)
                                                        or not _satisfied_now(definition["requires"], records[required]))
                if waits:
                    waiting.append(required)
                if required in unborn:   # its resolution is sure to find this task's requirement
                    registration.listening.setdefault(task_id, set()).add(required)
                if required in listed_by.get(task_id, ()):
                    continue
                if waits and not unresolved and born(required):
                    outside.append((records[required], dependent))   # listed if its row has room
                else:
                    edges.append((required, dependent, definition["expires"]))
            if dependent.waits_on > 1:
                # A task waiting on one task needs no count of what is left: its dependency's
                # resolution schedules it (see `_satisfy`), its re-check reads that task.
                requirement_rows += [(task_id, required) for required in waiting]
            registration.ready[task_id] = not waiting
            if not unresolved and any(born(required) for required in waiting):
                if dependent.waits_on == 1:
                    alone.append(task_id)   # read again below, once listed
                else:   # the intent stands for the re-check if this process dies before it
                    registration.recheck[task_id] = self.messages.intend_readiness_check(task_id)
        # Requirement rows before the listings: a resolution that finds a task listed then
        # finds its requirement row too (one written after it would wait for ever).
        self.requirement_table.add(requirement_rows)
        listed = list(DEPENDENCY_READS.map(lambda pair: self._list_on(*pair), outside))
        edges += [(record.task_id, dependent, definitions[dependent.task_id]["expires"])
                  for (record, dependent), (on_row, _) in zip(outside, listed) if not on_row]
        for (record, dependent), (_, row) in zip(outside, listed):
            if dependent.waits_on > 1 and row is not None and not _satisfied_now(
                    definitions[dependent.task_id]["requires"], row):
                registration.listening.setdefault(dependent.task_id, set()).add(record.task_id)
        # A row that this call's conditional write listed a task on was as current as a read
        # after the listing would be: that task's dependency needs no second look.
        seen = {dependent.task_id: row for (_, dependent), (_, row) in zip(outside, listed) if row is not None}
        if unchecked:
            registration.added = [(required, dependent.task_id)
                                  for required, dependent, _ in self.dependency_table.add_absent(edges)]
        else:
            self.dependency_table.add(edges)
        for required, dependent, _ in edges:
            registration.tabled.setdefault(dependent.task_id, []).append(required)
        unseen = [task_id for task_id in alone if task_id not in seen]
        looked = dict(zip(unseen, DEPENDENCY_READS.map(lambda task_id: self._ready(definitions[task_id]), unseen)))
        for task_id in alone:
            ready = looked[task_id] if task_id in looked else _satisfied_now(definitions[task_id]["requires"],
                                                                             seen[task_id])
            registration.ready[task_id] = ready
            if not ready:
                registration.recheck[task_id] = None
        return registration

    def withdraw(self, registration: Registration, task_ids) -> None:
        """Take back the TaskDependencies rows `registration` wrote for tasks it was refused
        (another definition had their taskIds). Should this process die first, a resolution
        that finds one leaves the task as it is (`dependencies.terms_met`)."""
        for task_id in set(task_ids):
            self.dependency_table.forget(task_id, [required for required, dependent in registration.added
                                                   if dependent == task_id])

    def _ready(self, definition: dict) -> bool:
        """Whether the one task `definition` waits on has resolved as it requires."""
        return _satisfied_now(definition["requires"], self._load(definition["dependencies"][0]))

    def _list_on(self, record: TaskRecord, dependent: Dependent) -> tuple[bool, TaskRecord | None]:
        """List a new dependent on the row of a task it waits on, before the dependent exists,
        if the row has room (else note that the table holds more). Whether the row lists it,
        and the row as this call's write left it (None if it wrote nothing): a write
        conditional on the row as read, so that version's status was still the task's at the
        listing. A dependency that resolved before this write is the new task's re-check's."""
        wrote: list[TaskRecord] = []

        def add(row: TaskRecord) -> TaskRecord:
            if row.more_dependents or any(d.task_id == dependent.task_id for d in row.dependents):
                return row
            if len(row.dependents) < LISTED_DEPENDENTS:
                return replace(row, dependents=row.dependents + (dependent,))
            return replace(row, more_dependents=True)

        def save(row: TaskRecord) -> TaskRecord:
            saved = self.task_table.save_dependents(row)
            wrote[:] = [saved]
            return saved
        saved = change_until_saved(lambda: self.task_table.load(record.task_id), add, save, first=record)
        on_row = saved is not None and any(d.task_id == dependent.task_id for d in saved.dependents)
        return on_row, (wrote[0] if wrote and on_row else None)

    def dependents(self, record: TaskRecord, after: str, limit: int) -> list[str]:
        """listDependentTasks: up to `limit` dependents of a task, in taskId order after `after`:
        those its row lists and those of the table (a dependency resolved when its dependent
        was created is in the table alone)."""
        table = self.dependency_table.dependents(record.task_id, after, limit)
        found = {dependent.task_id for dependent in (*record.dependents, *table) if dependent.task_id > after}
        return sorted(found)[:limit]

    def recheck(self, task_id: str, definition: dict, listening: set[str] | frozenset[str] = frozenset()) -> bool:
        """Satisfy the requirements whose tasks have resolved (all of them, PAGE at a time)
        and schedule the task if none is left; True if this call scheduled it. `listening`:
        dependencies not to read (see `Registration.listening`). A task waiting on one task
        has no requirement row: that task is read."""
        requires = definition["requires"]
        if Dependent.of(task_id, definition).waits_on == 1:
            return self._ready(definition) and self.schedule(task_id)
        after, page = "", PAGE
        while True:
            waiting = self.requirement_table.remaining(task_id, page, after)
            if not waiting and not after:
                return self.schedule(task_id)
            unheard = [required_id for required_id in waiting if required_id not in listening]
            for required_id, record in zip(unheard, DEPENDENCY_READS.map(self._load, unheard)):
                if _satisfied_now(requires, record) and not self.requirement_table.satisfy(task_id, required_id):
                    return self.schedule(task_id)   # that was the last one
            if len(waiting) < page:
                return False
            after = waiting[-1]

    def schedule_if_ready(self, task_id: str) -> bool:
        """Re-check an unscheduled task; True if that scheduled it (not a concurrent handler
        of its last dependency's resolution)."""
        record = self.task_table.load(task_id, with_definition=True)
        if record is None or record.status.runs:
            return False
        return self.recheck(task_id, record.definition)

    def task_resolved(self, resolution: Resolution, long_fan_out: bool = True) -> bool:
        """Handle a resolution: satisfy and schedule the task's dependents, those its row
        lists, then those of the table (if its row says so) page by page. A fan-out longer
        than a page records its progress after each page, and a repeated handling resumes
        after it (or skips it, once done). `long_fan_out=False`: do nothing and answer False
        if the fan-out is that long."""
        task_id, state = resolution.task_id, resolution.state
        page = self.dependency_table.dependents(task_id, "", PAGE) if resolution.more_dependents else []
        long = len(page) == PAGE
        if long and not long_fan_out:
            return False
        self._satisfy_all(resolution.dependents, task_id, state)
        progress = f"{PROGRESS}{task_id}.{resolution.run_id}"   # kept in the expiry index: it goes with the task
        if long:
            after = self.expiries.get(resolution.expires, progress)
            if after == ALL_DONE:
                return True
            if after:
                page = self.dependency_table.dependents(task_id, after, PAGE)
        while page:
            self._satisfy_all(page, task_id, state)
            if len(page) < PAGE:
                break
            self.expiries.put(resolution.expires, progress, page[-1].task_id)
            page = self.dependency_table.dependents(task_id, page[-1].task_id, PAGE)
        if long:
            self.expiries.put(resolution.expires, progress, ALL_DONE)
        return True

    def _satisfy_all(self, dependents, required_id: str, state: RunState) -> None:
        """`_satisfy` each dependent; those waiting on this task alone are scheduled together
        (their hints in a transaction per partition: a fan-out's page of 500 children wrote
        500 hints one by one, half of what scheduling them cost)."""
        alone = [dependent.task_id for dependent in dependents
                 if dependent.waits_on == 1 and satisfies(dependent.requires, state)]
        if len(alone) > 1:
            now = utcnow()
            left = set(self.updater.apply_many(alone, lambda status: lifecycle.schedule(status, now),
                                               "schedule (dependencies done)", DEPENDENTS,
                                               _sole_terms(required_id, state)))
            done = set(alone) - left
            dependents = [dependent for dependent in dependents if dependent.task_id not in done]
        list(DEPENDENTS.map(lambda dependent: self._satisfy(dependent, required_id, state), dependents))

    def _satisfy(self, dependent: Dependent, required_id: str, state: RunState) -> None:
        if not satisfies(dependent.requires, state):
            return
        # Its only dependency (it has no requirement row), or its last requirement satisfied.
        if dependent.waits_on == 1 or not self.requirement_table.satisfy(dependent.task_id, required_id):
            terms = _sole_terms(required_id, state) if dependent.waits_on == 1 else None
            if self._schedule(dependent.task_id, "dependencies done", terms) is None:
                # Listed, but its row is not written yet: its creator re-checks after writing
                # it, and this intent does if the creator dies first (see the module's docstring).
                self.messages.intend_readiness_check(dependent.task_id)
                log.info("task %s is not written yet: its readiness is checked again later", dependent.task_id,
                         extra={"taskId": dependent.task_id})

    def schedule(self, task_id: str, why: str = "dependencies done") -> bool:
        """Give a task whose wait is over its first run; True if this call did. One past its
        deadline is left to the deadline resolver (logged)."""
        return bool(self._schedule(task_id, why))

    def _schedule(self, task_id: str, why: str, terms: Callable[[TaskRecord], None] | None = None) -> bool | None:
        """`schedule`; None if the task has no row. `terms`: a check of the row first, which
        raises Conflict to leave the task as it is."""
        now = utcnow()
        try:
            changed, record = self.updater.apply_if_found(task_id, lambda status: lifecycle.schedule(status, now),
                                                          f"schedule ({why})", authorize=terms)
        except Conflict as refused:
            log.info("task %s not scheduled: %s", task_id, refused.message, extra={"taskId": task_id})
            return False
        return changed if record is not None else None


def _sole_terms(required_id: str, state: RunState) -> Callable[[TaskRecord], None]:
    """The check of a listed dependent's row that it waits on `required_id` alone, on terms
    the resolution meets (`dependencies.terms_met`)."""
    def check(record: TaskRecord) -> None:
        if not terms_met(record.sole_dependency, required_id, state):
            raise Conflict(f"it is listed on {required_id}, but its definition does not wait on that task "
                           f"alone on terms its {state.value} resolution meets")
    return check


def _satisfied_now(requires: str, record: TaskRecord | None) -> bool:
    if record is None or not record.status.runs:
        return False
    state = resolution_of(record.status, record.status.latest.run_id)
    return state is not None and satisfies(requires, state)


def _refuse_missing(records: dict, total: int) -> None:
    missing = sorted(task_id for task_id, record in records.items() if record is None)
    if missing:
        unread = f" (stopped after reading {len(records)} of {total})" if len(records) < total else ""
        raise InputError(f"dependencies: these tasks do not exist: {_some(missing)}{unread}")


def _check_dependencies(definitions: dict[str, dict], records: dict, unborn: frozenset[str]) -> None:
    expiring = set()
    for definition in definitions.values():
        deadline = parse_iso(definition["deadline"])
        for required in (r for r in definition["dependencies"] if r not in unborn):
            expires = (definitions[required]["expires"] if required in definitions
                       else records[required].summary["expires"])
            if parse_iso(expires) < deadline:
                expiring.add(required)
    if expiring:
        raise InputError(f"dependencies: these tasks expire before the dependent's deadline: "
                           f"{_some(sorted(expiring))}")


def _some(task_ids: list[str], shown: int = 50) -> str:
    more = len(task_ids) - shown
    return ", ".join(task_ids[:shown]) + (f" and {more} more" if more > 0 else "")
