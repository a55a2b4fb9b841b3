"""The hooks service's calls (Taskcluster's hooks API): hooks and their groups, triggers and
trigger tokens, status and last fires.

A hook's events (hook-created, hook-updated, hook-deleted) are written with the change they
announce, in the hook row's outbox, and published right after (see `event_publisher`). A
removed hook's row therefore first becomes a tombstone holding hook-deleted, and is deleted
once that is out; a time-index row written before the tombstone, due a minute later, makes
the scheduler finish the job if this process dies first (`bury`).

The time of a hook's next scheduled fire is on its row and in the time index `hook-fires`,
which the scheduler reads (see `scheduler`): the index row is written before the hook row
that says that time, so no fire is ever without one; an index row the hook no longer says
(the hook was changed since) is dropped when it comes due. Times are the hooks' clock's
(the system's, unless a test injects one: see `runtime.clock`).

Each change is recorded in the audit history as `<hookGroupId>/<hookId>` with who made it
(`by`), as Taskcluster records it: created (not a createHook repeated as made), updated,
deleted (even of a hook that was not there).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Callable

from shared.auth.errors import AuthenticationFailed
from shared.domain.errors import Conflict, NotFound
from shared.domain.hooks import check_schedule, hook_changed, hook_definition, new_fire_key, next_fire
from shared.domain.timestamps import to_iso, utcnow
from shared.services.auth.audit_history import CREATED, DELETED, UPDATED, AuditHistory
from shared.services.event_publisher import EventPublisher
from shared.services.hooks.firing import HookFiring
from shared.services.hooks.hook_secrets import HookSecrets
from shared.services.hooks.trigger_schema import check_trigger_schema
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.hook_fire_table import HookFireTable
from shared.storage.tables.hook_table import HookRecord, HookTable
from shared.storage.tables.task_table import TaskTable

BURY_AFTER = timedelta(minutes=1)   # when the scheduler looks at a removed hook's tombstone


class Hooks:
    def __init__(self, table: HookTable, fires: HookFireTable, index: TimeIndex, firing: HookFiring,
                 secrets: HookSecrets, task_table: TaskTable, publisher: EventPublisher,
                 clock: Callable[[], datetime], audit: AuditHistory) -> None:
        self.table = table
        self.fires = fires
        self.index = index
        self.firing = firing
        self.secrets = secrets
        self.task_table = task_table
        self.publisher = publisher
        self.clock = clock
        self.audit = audit

    # -- reading -----------------------------------------------------------------------------
    def groups(self) -> dict:
        return {"groups": sorted(self.table.groups())}

    def list(self, hook_group_id: str) -> dict:
        hooks = [hook.definition for hook in self.table.hooks(hook_group_id) if not hook.deleted]
        if not hooks:
            raise NotFound("No such group")
        return {"hooks": hooks}

    def get(self, hook_group_id: str, hook_id: str) -> dict:
        return self._existing(hook_group_id, hook_id).definition

    def status(self, hook_group_id: str, hook_id: str) -> dict:
        """getHookStatus: the last fire, and the next scheduled one if the hook has a schedule."""
        hook = self._existing(hook_group_id, hook_id)
        fires, _ = self.fires.page(hook_group_id, hook_id, "", 1)
        if not fires:
            last = {"result": "no-fire"}
        elif fires[0].result == "success":
            last = {"result": "success", "taskId": fires[0].task_id, "time": fires[0].task_create_time}
        else:
            last = {"result": "error", "error": _error_object(fires[0].error), "time": fires[0].task_create_time}
        out = {"lastFire": last}
        if hook.definition["schedule"] and hook.next_fire:
            out["nextScheduledDate"] = hook.next_fire
        return out

    def last_fires(self, hook_group_id: str, hook_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listLastFires: newest first, each with its task's state now (its last run's)."""
        fires, last = self.fires.page(hook_group_id, hook_id, after, limit)
        if not fires:
            raise NotFound("No such hook or never fired")
        return {"lastFires": self._with_tasks(fires)}, last

    def overview(self, fires_per_hook: int) -> dict:
        """Every hook with its next scheduled fire and its latest fires, for people (the
        browser view): not a Taskcluster call, and not a hot path (a read per group and hook)."""
        hooks = [hook for group in sorted(self.table.groups()) for hook in self.table.hooks(group) if not hook.deleted]
        out = []
        for hook in hooks:
            fires, _ = self.fires.page(hook.hook_group_id, hook.hook_id, "", fires_per_hook)
            out.append({"hookGroupId": hook.hook_group_id, "hookId": hook.hook_id,
                        "name": hook.definition["metadata"].get("name", ""), "schedule": hook.definition["schedule"],
                        "nextScheduledDate": hook.next_fire or None,
                        "lastFires": self._with_tasks(fires, with_group=True)})
        return {"hooks": out}

    def _with_tasks(self, fires: list, with_group: bool = False) -> list[dict]:
        """Fires as listLastFires shows them, each with its task's state now (its last run's);
        `with_group`: and the task's group, None where there is no task (for a link to it)."""
        task_ids = list(dict.fromkeys(fire.task_id for fire in fires))
        records = dict(zip(task_ids, self.task_table.load_many(task_ids)))
        out = []
        for fire in fires:
            record = records.get(fire.task_id)
            runs = record.status.runs if record is not None else ()
            out.append({**fire.to_json(), "taskState": runs[-1].state.value if runs else "unknown"})
            if with_group:
                out[-1]["taskGroupId"] = record.summary["taskGroupId"] if record is not None else None
        return out

    # -- writing -----------------------------------------------------------------------------
    def create(self, hook_group_id: str, hook_id: str, body: dict, *, by: str) -> dict:
        """createHook: the definition stored; the same definition again is no change (200);
        another one is a Conflict."""
        definition = self._checked(hook_group_id, hook_id, body)
        new = HookRecord(hook_group_id, hook_id, definition,
                         self.secrets.seal_token(hook_group_id, hook_id, self.secrets.new_token()),
                         self.secrets.seal_fire_key(hook_group_id, hook_id, new_fire_key()),
                         self._schedule_next(hook_group_id, hook_id, definition["schedule"]),
                         outbox=self._event("created", hook_group_id, hook_id))
        self.table.touch_group(hook_group_id)

        def write(existing: HookRecord | None) -> bool:
            """Whether the hook was made (not there before, or a tombstone)."""
            try:
                if existing is None:
                    saved = self.table.insert(new)
                elif not existing.deleted:
                    if existing.definition == definition:
                        return False
                    raise Conflict(f"hook `{hook_group_id}/{hook_id}` already exists.")
                else:   # a tombstone, whose hook-deleted may not be out: it is kept in the outbox
                    saved = self.table.save(replace(new, etag=existing.etag, outbox=existing.outbox + new.outbox))
            except AlreadyExists:
                raise ChangedSinceRead(new.key) from None   # made meanwhile: read it and decide again
            self.table.touch_group(hook_group_id)   # after the row too: see `hook_table`
            self.publisher.written(self.table, saved)
            return True
        if until_written(lambda: self.table.get(hook_group_id, hook_id), write):
            self._audit(hook_group_id, hook_id, by, CREATED)
        return definition

    def update(self, hook_group_id: str, hook_id: str, body: dict, *, by: str) -> dict:
        """updateHook: a new definition (bindings kept when the body has none) and the next
        fire of its schedule from now."""
        definition = self._checked(hook_group_id, hook_id, body)

        def updated(hook: HookRecord) -> HookRecord:
            changed = {**definition, "bindings": body.get("bindings", hook.definition["bindings"])}
            return replace(self.secrets.resealed(self._live(hook)), definition=changed,
                           next_fire=self._schedule_next(hook_group_id, hook_id, changed["schedule"]),
                           outbox=hook.outbox + self._event("updated", hook_group_id, hook_id))
        definition = self._change(hook_group_id, hook_id, updated).definition
        self._audit(hook_group_id, hook_id, by, UPDATED)
        return definition

    def remove(self, hook_group_id: str, hook_id: str, *, by: str) -> dict:
        """removeHook: the hook and its last fires are gone (a hook that is not there is no
        error, as in Taskcluster)."""
        hook = self.table.get(hook_group_id, hook_id)
        if hook is None:
            self._audit(hook_group_id, hook_id, by, DELETED)
            return {}
        if not hook.deleted:
            self.watch(hook_group_id, hook_id, self.clock() + BURY_AFTER)

            def deleted(record: HookRecord) -> HookRecord:
                return record if record.deleted else replace(record, deleted=True, next_fire="", outbox=(
                    record.outbox + self._event("deleted", hook_group_id, hook_id)))
            hook, _ = self.publisher.change(self.table, lambda: self.table.get(hook_group_id, hook_id), deleted,
                                            self.table.save, first=hook)
        self.fires.forget(hook_group_id, hook_id)
        if hook is not None:
            self.bury(hook)
        self._audit(hook_group_id, hook_id, by, DELETED)
        return {}

    def bury(self, tombstone: HookRecord) -> bool:
        """Delete a removed hook's row once its events are out (and its group's row with its
        last hook); whether it is gone."""
        if tombstone.outbox and not self.publisher.settle(self.table, tombstone.key, tombstone.outbox,
                                                          tombstone.etag):
            return False
        current = self.table.get(tombstone.hook_group_id, tombstone.hook_id)
        if current is None or not current.deleted:
            return True
        if current.outbox and not all(self.publisher.marks.covered(event) for event in current.outbox):
            return False
        try:
            self.table.delete(current)
        except ChangedSinceRead:
            return False
        self.table.drop_group_if_empty(tombstone.hook_group_id)
        return True

    # -- triggers and tokens -----------------------------------------------------------------
    def trigger(self, hook_group_id: str, hook_id: str, payload: dict, client_id: str | None) -> dict:
        return self.firing.trigger(self._existing(hook_group_id, hook_id), "triggerHook", payload, client_id)

    def trigger_with_token(self, hook_group_id: str, hook_id: str, token: str, payload: dict) -> dict:
        hook = self._existing(hook_group_id, hook_id)
        if not self.secrets.token_matches(hook, token):
            raise AuthenticationFailed("invalid hook token")
        return self.firing.trigger(hook, "triggerHookWithToken", payload)

    def token(self, hook_group_id: str, hook_id: str) -> dict:
        return {"token": self.secrets.token(self._existing(hook_group_id, hook_id))}

    def reset_token(self, hook_group_id: str, hook_id: str) -> dict:
        """A new trigger token; the old one no longer triggers the hook."""
        token = self.secrets.new_token()
        self._change(hook_group_id, hook_id, lambda hook: replace(
            self._live(hook), trigger_token=self.secrets.seal_token(hook_group_id, hook_id, token)))
        return {"token": token}

    # -- helpers -----------------------------------------------------------------------------
    def _checked(self, hook_group_id: str, hook_id: str, body: dict) -> dict:
        definition = hook_definition(hook_group_id, hook_id, body)
        check_schedule(definition["schedule"], self.clock())
        check_trigger_schema(definition["triggerSchema"])
        return definition

    def _schedule_next(self, hook_group_id: str, hook_id: str, schedule: list[str]) -> str:
        """The next fire of `schedule` from now, indexed (before any row says it); '' if none."""
        return self.watch(hook_group_id, hook_id, next_fire(schedule, self.clock()))

    def watch(self, hook_group_id: str, hook_id: str, moment: datetime | None) -> str:
        """Have the scheduler look at the hook at `moment` (written before any row says that
        time); `moment` as ISO text ('' for None: nothing to look at)."""
        if moment is None:
            return ""
        self.index.put(to_iso(moment), bounded_key(f"{hook_group_id}/{hook_id}", 400),
                       json.dumps([hook_group_id, hook_id]))
        return to_iso(moment)

    def _audit(self, hook_group_id: str, hook_id: str, by: str, action: str) -> None:
        self.audit.record("hook", f"{hook_group_id}/{hook_id}", by, action)

    def _change(self, hook_group_id: str, hook_id: str, change: Callable[[HookRecord], HookRecord]) -> HookRecord:
        saved, _ = self.publisher.change(self.table, lambda: self.table.get(hook_group_id, hook_id), change,
                                         self.table.save)
        if saved is None or saved.deleted:
            raise NotFound("No such hook")
        return saved

    def _existing(self, hook_group_id: str, hook_id: str) -> HookRecord:
        hook = self.table.get(hook_group_id, hook_id)
        if hook is None or hook.deleted:
            raise NotFound("No such hook")
        return hook

    @staticmethod
    def _live(hook: HookRecord) -> HookRecord:
        if hook.deleted:
            raise NotFound("No such hook")
        return hook

    def _event(self, change: str, hook_group_id: str, hook_id: str) -> tuple:
        if not self.publisher.publishing:
            return ()
        return (hook_changed(change, hook_group_id, hook_id, to_iso(utcnow())),)   # outboxes keep real time


def index_entry(value: str) -> tuple[str, str]:
    """The (hookGroupId, hookId) a `hook-fires` index row is about."""
    hook_group_id, hook_id = json.loads(value)
    return hook_group_id, hook_id


def _error_object(error: str) -> dict:
    """A recorded fire's error as getHookStatus shows it: its JSON, or `{message}`."""
    try:
        parsed = json.loads(error)
    except ValueError:
        return {"message": error}
    return parsed if isinstance(parsed, dict) else {"message": error}
