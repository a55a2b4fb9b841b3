"""A quiet group's unresolved tasks, read one by one: what the watchdog acts on.

Only a group whose counts showed nothing joining or resolving for the stall time gets here
(see `watchdog`), so the reads (a page of the group's unresolved rows per 1,000 tasks, then
each unresolved task's row, at once) are paid by groups that may be stuck, not by every
group at every look. The resolved ones are counted from the group's member rows (keys only).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from shared.domain.group_watch import STATES
from shared.domain.runs import RunState, TaskState
from shared.domain.timestamps import parse_iso
from shared.runtime.thread_pools import TASK_READS
from shared.storage.tables.task_group_table import TaskGroupTable
from shared.storage.tables.task_table import TaskRecord, TaskTable

PAGE = 1000


@dataclass
class Examination:
    counts: dict[str, int]                         # unresolved tasks by state, then `resolved`
    last_change: datetime | None = None            # the latest run scheduled or started among them
    unresolved: list[str] = field(default_factory=list)
    # Unscheduled tasks none of whose dependencies is an unresolved member of the group:
    # each may be ready (its dependencies resolved) or blocked for good; the tracker decides.
    maybe_ready: list[str] = field(default_factory=list)
    expired: list[TaskRecord] = field(default_factory=list)   # running past `takenUntil`
    live: int = 0                                              # running within `takenUntil`
    pending: Counter = field(default_factory=Counter)          # taskQueueId -> pending tasks


def examine(group_table: TaskGroupTable, task_table: TaskTable, task_group_id: str, now: datetime) -> Examination:
    """Read the group's unresolved tasks and sort them out as of `now`."""
    unresolved = _all(lambda after: group_table.unresolved(task_group_id, PAGE, after))
    records = [record for record in TASK_READS.map(lambda task_id: task_table.load(task_id, with_definition=True),
                                                 unresolved) if record is not None]
    waiting = {record.task_id for record in records if not record.status.state.is_resolved}
    found = Examination(Counter({state: 0 for state in STATES}), unresolved=sorted(waiting))
    for record in records:
        _sort(found, record, waiting, now)
    members = len(_all(lambda after: group_table.members(task_group_id, after, PAGE)))
    # Members without a task row: their creator died between the membership and the row
    # (a retried createTask makes the row). Until then the group cannot resolve: they count.
    missing = len(unresolved) - len(records)
    found.counts = {**found.counts, "resolved": max(members - len(waiting) - missing, 0),
                    **({"missing": missing} if missing else {})}
    return found


def _sort(found: Examination, record: TaskRecord, waiting: set[str], now: datetime) -> None:
    state, run = record.status.state, record.status.latest
    if state.is_resolved:   # resolved since its group's counts were read: its resolution is the change
        return
    found.counts[state.value] += 1
    if state is TaskState.UNSCHEDULED:
        dependencies = record.definition["dependencies"]
        # A task without dependencies that is unscheduled is held on purpose (a graph's root
        # before the graph starts): never the watchdog's to schedule.
        if dependencies and not waiting.intersection(dependencies):
            found.maybe_ready.append(record.task_id)
        return
    changed = parse_iso(run.started if run.state is RunState.RUNNING and run.started else run.scheduled)
    found.last_change = max(found.last_change or changed, changed)
    if state is TaskState.PENDING:
        found.pending[record.summary["taskQueueId"]] += 1
    elif run.taken_until and parse_iso(run.taken_until) <= now:
        found.expired.append(record)
    else:
        found.live += 1


def _all(page) -> list[str]:
    """Every key `page(after)` gives, a page at a time."""
    keys: list[str] = []
    while batch := page(keys[-1] if keys else ""):
        keys += batch
        if len(batch) < PAGE:
            break
    return keys
