"""The hooks' timer: fires each scheduled fire that came due, once, and moves its hook on.

It reads only the `hook-fires` time index rows due by the hooks' clock (see `hooks`), never
every hook. For each: the hook is read; a row whose time the hook no longer says is dropped;
a removed hook's tombstone is buried (see `Hooks.bury`); otherwise the fire due at that time
is made (see `firing`: its taskId is derived from the hook and the time, so making it again
creates no second task) and the hook moved to its first fire after both that time and the
present (`domain.hooks.advance`): a fire missed while the app was down is made once, the
ones between are skipped, as in Taskcluster. The next fire's index row is written before the
hook row says it, and the row that came due removed last, so a timer that dies anywhere
leaves a fire to be made again, never one lost. A fire refused (the template, the role's
scopes, the task's checks) is recorded and the hook moved on, as Taskcluster does; one that
failed for want of storage is left due, for the next run.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from shared.auth.errors import AuthError
from shared.domain.errors import QueueError
from shared.domain.hooks import advance
from shared.domain.timestamps import parse_iso
from shared.runtime.clock import Clock
from shared.services.hooks.hooks import Hooks, index_entry
from shared.services.sweeps.sweep import KEEP, Sweep
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.hook_table import HookRecord

log = logging.getLogger("hooks.scheduler")


class HookScheduler(Sweep):
    action = "fire"

    def __init__(self, index: TimeIndex, hooks: Hooks, clock: Clock) -> None:
        super().__init__(index)
        self.hooks = hooks
        self.clock = clock

    def sweep(self, now: datetime | None = None, max_items: int = 1000) -> int:
        """Make the fires due by the hooks' clock (or `now`); how many hooks fired or were buried."""
        return super().sweep(now or self.clock(), max_items)

    def _handle(self, item: DueItem, now: datetime) -> int | None:
        hook = self.hooks.table.get(*index_entry(item.value))
        if hook is None:
            return 0
        if hook.deleted:
            return 1 if self.hooks.bury(hook) else KEEP
        if hook.next_fire != item.due:
            return 0   # the hook was changed or moved on since: its own row is elsewhere
        scheduled = parse_iso(item.due)
        try:
            self.hooks.firing.scheduled(hook, scheduled)
        except (QueueError, AuthError) as refused:
            if refused.code == "InternalServerError":
                log.warning("hook %s: the fire due at %s failed (%s); trying again", hook.key, item.due, refused)
                return KEEP
            log.warning("hook %s: the fire due at %s was refused: %s", hook.key, item.due, refused.message)
        except Exception:
            log.exception("hook %s: the fire due at %s failed; trying again", hook.key, item.due)
            return KEEP
        self._move_on(hook, scheduled, now)
        return 1

    def _move_on(self, hook: HookRecord, scheduled: datetime, now: datetime) -> None:
        """The hook's next fire after the one due at `scheduled`, unless it was changed since."""
        due = hook.next_fire

        def moved(record: HookRecord) -> HookRecord:
            if record.deleted or record.next_fire != due:
                return record
            following = advance(record.definition["schedule"], scheduled, now)
            return replace(record, next_fire=self.hooks.watch(hook.hook_group_id, hook.hook_id, following))
        self.hooks.publisher.change(self.hooks.table, lambda: self.hooks.table.get(hook.hook_group_id, hook.hook_id),
                                    moved, self.hooks.table.save, first=hook)
