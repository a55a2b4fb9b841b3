"""The watchdog's verdicts about a group, where people and programs see them: on the group's
row (what `view` shows: the scheduler API, the browser view, `taskq group`), as a
`task-group-stalled` event written in that row's outbox with the verdict (so it is never
lost, and published once per verdict), and as a log line at every look that finds one.

The group's row is written only when the verdict changes: a new verdict, or one that no
longer stands (the group moved, or resolved). A group that stays stalled costs its look
no write. The row also keeps what the group asked to be done once stalled (`onStall`),
which only a caller who may cancel the group can set.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta

from shared.domain import group_watch, task_events
from shared.domain.errors import InvalidInput, NotFound
from shared.domain.group_watch import ON_STALL, Verdict
from shared.domain.timestamps import to_iso
from shared.services.task_groups.task_groups import Authorize, TaskGroups, shown_expires
from shared.storage.tables.task_group_table import TaskGroupRecord

log = logging.getLogger("queue.watchdog")


class StallReports:
    def __init__(self, task_groups: TaskGroups, stall: timedelta) -> None:
        self.task_groups = task_groups
        self.group_table = task_groups.group_table
        self.publisher = task_groups.publisher
        self.stall = stall

    def record(self, group: TaskGroupRecord, verdict: Verdict | None, now: datetime) -> None:
        """Note `verdict` on the group (None: no verdict stands), its event with it; log it."""
        if verdict is not None:
            log.warning("task group %s %s", group.task_group_id, verdict.describe(),
                        extra={"taskGroupId": group.task_group_id, "watchdog": verdict.state,
                               "counts": verdict.counts})

        def noted(record: TaskGroupRecord) -> TaskGroupRecord:
            stored = Verdict.decode(record.watch)
            if stored == verdict:
                return record
            if verdict is None:
                return replace(record, watch="")
            fresh = replace(verdict, reported=to_iso(now))
            event = task_events.group_stalled(record.task_group_id, record.scheduler_id, shown_expires(record),
                                              fresh.to_json(), to_iso(now))
            return replace(record, watch=fresh.encode(),
                           outbox=record.outbox + ((event,) if self.publisher.publishing else ()))
        self.publisher.change(self.group_table, lambda: self.group_table.load(group.task_group_id), noted,
                              self.group_table.save, first=group)

    def view(self, task_group_id: str) -> dict:
        """What the watchdog last found about the group, and what the group asked for."""
        return self._render(self.task_groups.existing(task_group_id))

    def set_on_stall(self, task_group_id: str, on_stall: str, authorize: Authorize = None) -> dict:
        """What to do with the group once it is stalled: `report` (the default) or `cancel`
        its unresolved tasks. `authorize(group)` is the caller's scope check."""
        if on_stall not in ON_STALL:
            raise InvalidInput(f"onStall: must be one of {', '.join(ON_STALL)}")
        group = self.task_groups.existing(task_group_id, authorize)
        saved, _ = self.publisher.change(self.group_table, lambda: self.group_table.load(task_group_id),
                                         lambda record: replace(record, on_stall=on_stall), self.group_table.save,
                                         first=group)
        if saved is None:
            raise NotFound(f"Task group {task_group_id} not found")
        log.info("task group %s: on stall, %s", task_group_id, on_stall,
                 extra={"taskGroupId": task_group_id, "onStall": on_stall})
        return self._render(saved)

    def _render(self, group: TaskGroupRecord) -> dict:
        return group_watch.view(group.task_group_id, group.scheduler_id, group.on_stall, self.stall,
                                Verdict.decode(group.watch))
