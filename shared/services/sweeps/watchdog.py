"""The watchdog (seed 003, "what could go wrong"): a timer over task groups with unresolved
tasks that finds the ones that stopped moving, acts on what it can repair and reports the
rest (see `domain.group_watch` for the verdicts, docs/watchdog.md for the whole design).

It never scans groups or tasks. Each group has an item in the `group-watch` time index:
written by createTask before the group's first members (once per process in a while, see
`GroupWatch`: a group's later tasks cost nothing), and pushed forward by the look that
handles it. A look costs one query: the count rows of the group's unresolved members (how
many, and when storage last changed one). A group with none left is dropped (its resolution
cleared any verdict, see `TaskGroups`); one whose counts changed within the stall time is
looked at again later (its row read only if its item says a verdict stands, to clear it).
Only a group where nothing joined or resolved for the stall time has its row and its
unresolved tasks read (`group_examination`), and only one where none of them changed state
either is acted on.

Index items are hints, as in every sweep: two items of one group (creators racing, a sweep
that died between writing the next item and removing its own) are looked at as one and
pushed to the same next item (`group_watch.next_look`). See TRUSTED and DROPPED for why a
member added after its group was dropped is always watched.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from shared.domain.group_watch import CANCEL, NO_WORKERS, STALLED, ItemNote, Verdict, finding, judge, next_look
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.runtime.thread_pools import WATCHDOG_ACTS, WATCHDOG_LOOKS
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.sweeps.claim_resolver import ClaimResolver
from shared.services.sweeps.deadline_resolver import DeadlineWatch, deadline_second
from shared.services.sweeps.sweep import Sweep
from shared.services.task_groups.group_examination import Examination, examine
from shared.services.task_groups.stall_reports import StallReports
from shared.services.task_groups.worker_presence import Presence, WorkerPresence
from shared.storage.patterns.recent_writes import RecentWrites
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.task_group_table import TaskGroupRecord, TaskGroupTable
from shared.storage.tables.task_table import TaskRecord, TaskTable

log = logging.getLogger("queue.watchdog")
INDEX = "group-watch"        # the time index's name
WATCHED = 65_536             # groups this process remembers having indexed
# A creator trusts its memory of having indexed a group for TRUSTED stall times; a group
# with no unresolved member is dropped once its counts have been still for DROPPED stall
# times. DROPPED > TRUSTED (with a margin for clocks): a member added after the drop was
# added by a creator whose memory had expired, which indexed the group again.
TRUSTED, DROPPED = 0.25, 0.5
# A group made for one task carries that task's deadline on its item if the deadline is
# this many stall times away or more (see `GroupWatch.carried`): the first look comes a
# stall time after creation, and hands the deadline on at least a stall time before it.
CARRIED = 2


class GroupWatch:
    """What createTask does for the watchdog: index each group of new tasks, before they
    join it, unless this process did lately (see TRUSTED).

    A group made for the one task it holds (Taskcluster's default group, a task's own:
    `TaskGroups.makes`) needs a deadline item too (`DeadlineWatch`), which would make two
    index writes per such task. Its watch item carries the task's deadline instead
    (`carried`), and the watchdog indexes that deadline (`Watchdog._hand_on`) when it stops
    watching the group (usually at the first look: the task resolved) or when the next look
    might come less than a stall time before the deadline. Both come before the item that
    carried it goes, so the deadline is never lost; it is indexed late only if the
    watchdog's sweep falls behind by more than a stall time."""

    def __init__(self, index: TimeIndex, stall: timedelta) -> None:
        self.index = index
        self.stall = stall
        self._indexed: RecentWrites[float] = RecentWrites(size=WATCHED)   # group -> monotonic time

    def due(self, definitions: dict[str, dict]) -> bool:
        """Whether `watch` has anything to write for these tasks."""
        return bool(self._unwatched(definitions, time.monotonic()))

    def carried(self, definitions: dict[str, dict]) -> dict[str, str]:
        """For the one task of a group made with it: its second of deadlines by its group,
        if `watch` has the group to index and the deadline is CARRIED stall times away or
        more; else nothing (the deadline is indexed by `DeadlineWatch` as any other)."""
        if len(definitions) != 1 or not self.due(definitions):
            return {}
        (definition,) = definitions.values()
        second = deadline_second(definition["deadline"])
        if parse_iso(second) - utcnow() < self.stall * CARRIED:
            return {}
        return {definition["taskGroupId"]: second}

    def watch(self, definitions: dict[str, dict], carried: dict[str, str] | None = None, lone: bool = False) -> list[str]:
        """Index the groups of `definitions` this process has not indexed lately, each item
        carrying the deadline `carried` names for its group, if any, and noting `lone` for
        groups made with their one task (see `Watchdog._look`); the groups indexed."""
        now = time.monotonic()
        new = self._unwatched(definitions, now)
        if not new:
            return new
        carried = carried or {}
        due = to_iso(utcnow() + self.stall)
        notes = {group: ItemNote(deadlines=frozenset([carried[group]] if group in carried else []), lone=lone).text()
                 for group in new}
        self.index.add([(due, group) for group in new], {group: text for group, text in notes.items() if text})
        for group in new:
            self._indexed.wrote(group, now)
        return new

    def _unwatched(self, definitions: dict[str, dict], now: float) -> list[str]:
        groups = sorted({definition["taskGroupId"] for definition in definitions.values()})
        return [group for group in groups
                if (self._indexed.get(group) or -float("inf")) < now - self.stall.total_seconds() * TRUSTED]


@dataclass(frozen=True)
class _Look:
    changed: int                  # tasks the look changed
    next: datetime | None         # when to look again (None: drop the group)
    verdict: bool = False         # whether a verdict stands on the group after it
    lone: bool = False            # whether the group's row said `lone` (made for one task, none joined)


class Watchdog(Sweep):
    action = "watchdog"

    def __init__(self, index: TimeIndex, deadlines: DeadlineWatch, group_table: TaskGroupTable, task_table: TaskTable,
                 dependency_tracker: DependencyTracker, claim_resolver: ClaimResolver, presence: WorkerPresence,
                 reports: StallReports, cancel: Callable[[list[str]], list[bool]], stall: timedelta) -> None:
        super().__init__(index)
        self.deadlines = deadlines
        self.group_table = group_table
        self.task_table = task_table
        self.dependency_tracker = dependency_tracker
        self.claim_resolver = claim_resolver
        self.presence = presence
        self.reports = reports
        self.cancel = cancel          # cancel tasks unless they resolved; whether it did, for each
        self.stall = stall

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        """Each group once (however many of its items came due), then the deadlines they
        hand on and their next items, before the due ones are removed."""
        notes: dict[str, ItemNote] = {}
        for item in items:
            note = ItemNote.parse(item.value)
            notes[item.key] = notes[item.key].merged(note) if item.key in notes else note
        served = _Served(self.presence, now - self.stall, now)
        looks = dict(zip(notes, WATCHDOG_LOOKS.map(lambda group: self._look_safely(group, notes[group], now, served),
                                                   notes)))
        handed, kept = self._hand_on(notes, looks)
        self.deadlines.add(handed)
        ahead = {group: look for group, look in looks.items() if look.next is not None}
        self.index.add([(to_iso(look.next), group) for group, look in ahead.items()], {
            group: text for group, look in ahead.items()
            if (text := ItemNote(look.verdict, kept[group], look.lone).text())})
        first = {}
        for item in items:
            first.setdefault(item.key, item)
        return [looks[item.key].changed if first[item.key] is item else 0 for item in items]

    def _hand_on(self, notes: dict[str, ItemNote], looks: dict[str, _Look]) -> tuple[list, dict[str, frozenset]]:
        """The carried deadlines to index now, as (group, second): all of a group no longer
        watched, and those the next look might come less than a stall time before; and by
        group, the deadlines its next item carries on."""
        handed, kept = [], {}
        for group, note in notes.items():
            later = looks[group].next
            due = {second for second in note.deadlines if later is None or parse_iso(second) <= later + self.stall}
            handed += [(group, second) for second in sorted(due)]
            kept[group] = note.deadlines - due
        return handed, kept

    def _look_safely(self, group_id: str, note: ItemNote, now: datetime, served: _Served) -> _Look:
        try:
            return self._look(group_id, note, now, served)
        except Exception:   # noqa: BLE001 (one group's trouble must not stop the others: looked at again later)
            log.exception("watchdog: looking at task group %s failed", group_id, extra={"taskGroupId": group_id})
            return _Look(0, now + self.stall, note.verdict, note.lone)

    def _look(self, group_id: str, note: ItemNote, now: datetime, served: _Served) -> _Look:
        """Look at one group, as its item's `note` says (a verdict stood; made for one task).
        The counts of a group whose row says `lone` are its one bucket's: two point reads
        (the row, the count) instead of the query over every bucket, which Azurite answers
        by scanning the whole table (18 ms at 120,000 rows, against 0.5 for a point read)."""
        hinted = note.verdict
        group = self.group_table.load(group_id) if note.lone else None
        lone = group is not None and group.lone
        left, counted = self.group_table.lone_totals(group) if lone else self.group_table.unresolved_totals(group_id)
        if not left:   # resolved (which cleared any verdict but a cancel's), or gone: kept a while, then dropped
            kept_until = counted + self.stall * DROPPED if counted else now
            return _Look(0, kept_until if kept_until > now else None, hinted, lone)
        if now - counted < self.stall:
            return self._moving(group_id, hinted, counted, now, group, lone)
        group = group or self.group_table.load(group_id)
        if group is None:
            return _Look(0, None)
        found = examine(self.group_table, self.task_table, group_id, now)
        quiet = max(counted, found.last_change or counted)
        if now - quiet < self.stall:
            return self._moving(group_id, bool(group.watch), quiet, now, group, lone)
        changed, verdict = self._act(group, found, quiet, now, served)
        self.reports.record(group, verdict, now)
        if verdict is None:
            log.info("task group %s quiet since %s with %d run(s) alive: %s", group_id, to_iso(quiet), found.live,
                     found.counts, extra={"taskGroupId": group_id, "counts": found.counts})
        return _Look(changed, now + self.stall if changed else next_look(quiet, now, self.stall), verdict is not None,
                     lone)

    def _moving(self, group_id: str, hinted: bool, since: datetime, now: datetime,
                group: TaskGroupRecord | None = None, lone: bool = False) -> _Look:
        """The group changed within the stall time: a verdict that stood is over (the group's
        row is read for it only if one did, unless it was read already)."""
        group = group or (self.group_table.load(group_id) if hinted else None)
        if group is not None and group.watch:
            self.reports.record(group, None, now)
        return _Look(0, next_look(since, now, self.stall), lone=lone)

    def _act(self, group: TaskGroupRecord, found: Examination, quiet: datetime, now: datetime,
             served: _Served) -> tuple[int, Verdict | None]:
        """Repair what can be repaired, find what nothing serves, cancel if the group asked."""
        scheduled = self._schedule(group.task_group_id, found.maybe_ready)
        handed = [record.task_id for record, done in zip(found.expired, WATCHDOG_ACTS.map(
            lambda record: self._hand_over(record, now), found.expired)) if done]
        findings = [finding("scheduled", scheduled)] if scheduled else []
        findings += [finding("claim-expired", handed)] if handed else []
        queues = [(queue, count, served(queue)) for queue, count in sorted(found.pending.items())]
        findings += [finding(NO_WORKERS, taskQueueId=queue, pending=count, detail=presence.detail)
                     for queue, count, presence in queues if not presence.served]
        state = judge(bool(scheduled or handed), any(item["kind"] == NO_WORKERS for item in findings), found.live)
        changed = len(scheduled) + len(handed)
        if state is None:
            return changed, None
        if state == STALLED and group.on_stall == CANCEL:
            cancelled = [task_id for task_id, done in zip(found.unresolved, self.cancel(found.unresolved)) if done]
            findings.append(finding("cancelled", cancelled))
            changed += len(cancelled)
        return changed, Verdict(state, found.counts, to_iso(quiet), tuple(findings))

    def _schedule(self, group_id: str, task_ids: list[str]) -> list[str]:
        """Schedule the tasks whose dependencies are all resolved as their `requires` demands
        (the tracker decides, as for a repair intent): each one is a message that was lost."""
        scheduled = [task_id for task_id, done in zip(
            task_ids, WATCHDOG_ACTS.map(self.dependency_tracker.schedule_if_ready, task_ids)) if done]
        for task_id in scheduled:
            log.warning("repaired: task %s of group %s had every dependency resolved as its requires demands but was "
                        "unscheduled (the message that would have scheduled it was lost); the watchdog scheduled it",
                        task_id, group_id, extra={"taskId": task_id, "taskGroupId": group_id, "repair": "watchdog"})
        return scheduled

    def _hand_over(self, record: TaskRecord, now: datetime) -> bool:
        run = record.status.latest
        log.warning("task %s run %s still running past its takenUntil %s: handed to the claim resolver",
                    record.task_id, run.run_id, run.taken_until,
                    extra={"taskId": record.task_id, "taskGroupId": record.summary["taskGroupId"],
                           "repair": "watchdog-claim"})
        return self.claim_resolver.expired(record.summary["taskQueueId"], record.task_id, run.run_id,
                                           run.worker_group or "", run.worker_id or "", now)


class _Served:
    """Presence by task queue, asked once per sweep batch (groups share queues)."""

    def __init__(self, presence: WorkerPresence, since: datetime, now: datetime) -> None:
        self._presence, self._since, self._now = presence, since, now
        self._known: dict[str, Presence] = {}
        self._lock = threading.Lock()

    def __call__(self, task_queue_id: str) -> Presence:
        with self._lock:
            known = self._known.get(task_queue_id)
        if known is None:
            known = self._presence.presence(task_queue_id, self._since, self._now)
            with self._lock:
                self._known[task_queue_id] = known
        return known
