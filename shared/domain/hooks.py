"""Hooks (Taskcluster's hooks service): the rules of firing one, without storage or HTTP.

A hook creates a task from its `task` template when fired: on its `schedule` (cron patterns,
`domain.cron`), by `triggerHook`, by `triggerHookWithToken`, or by a Pulse message. The task is
created with the hook's role, `assume:hook-id:<hookGroupId>/<hookId>`, so it can use only what
that role grants.

A scheduled fire is idempotent: its taskId is derived from the hook and the scheduled time, so
a timer that runs twice, or a process that dies after creating the task and before recording
the fire, fires it again under the same taskId and the queue creates no second task. Taskcluster
keeps the next taskId secret (whoever knows it could create that task first and so stop the
fire); here it is an HMAC of the hook and the time under a key of the hook's own (`fire_key`),
stored with the hook and never shown, so it is as unpredictable and stays reproducible.

A fire missed while the app was down is made up once, as in Taskcluster: the hook keeps the
time of its next fire; a sweep finding that time past fires it (with `now` = that time) and
then moves on to the first time after the present (`advance`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime, timedelta
from typing import Iterable

from shared.domain.cron import CronError, CronPattern
from shared.domain.errors import InputError
from shared.domain.ids import is_slugid, slugid_from_digest
from shared.domain.task_events import Event
from shared.domain.timestamps import to_iso

FIRED_BY = ("schedule", "triggerHook", "triggerHookWithToken", "pulseMessage")
# A scheduled fire is rendered with `now` = the time it was scheduled for, as Taskcluster does,
# unless it is made up later than this (the app was down): the queue refuses a task created
# more than 15 minutes ago, so such a fire takes the time it is made up at.
LATE = timedelta(minutes=10)
MAX_DEFINITION_CHARS = 300_000   # of a hook's definition as JSON (a row holds 1 MiB)
DEFAULT_TRIGGER_SCHEMA = {"type": "object", "additionalProperties": False}


def hook_role(hook_group_id: str, hook_id: str) -> str:
    """The only scope a hook's task is created with (the role's expansion gives the rest)."""
    return f"assume:hook-id:{hook_group_id}/{hook_id}"


def hook_definition(hook_group_id: str, hook_id: str, body: dict) -> dict:
    """The definition stored for a createHook or updateHook body (already checked against
    create-hook-request), with Taskcluster's defaults; InputError if its ids are not the
    URL's. The schedule and the triggerSchema are checked by their own rules."""
    if body.get("hookGroupId", hook_group_id) != hook_group_id:
        raise InputError("Hook Group Ids do not match")
    if body.get("hookId", hook_id) != hook_id:
        raise InputError("Hook Ids do not match")
    definition = {"hookGroupId": hook_group_id, "hookId": hook_id, "bindings": body.get("bindings", []),
                  "metadata": {"emailOnError": True, **body["metadata"]}, "task": body["task"],
                  "schedule": body.get("schedule", []), "triggerSchema": body.get("triggerSchema",
                                                                                   DEFAULT_TRIGGER_SCHEMA)}
    if len(json.dumps(definition, separators=(",", ":"))) > MAX_DEFINITION_CHARS:
        raise InputError(f"task: the hook's definition is larger than {MAX_DEFINITION_CHARS} characters of JSON")
    return definition


def hook_changed(change: str, hook_group_id: str, hook_id: str, at: str) -> Event:
    """hook-created, hook-updated or hook-deleted (`change`), as Taskcluster's hooks service
    announces them: the ids alone, routing key `_` (its only word is the reserved one)."""
    exchange = f"hook-{change}"
    return Event(exchange, "_", {"hookGroupId": hook_group_id, "hookId": hook_id},
                 f"hooks/{hook_group_id}/{hook_id}/{exchange}/{at}", at)


def fire_time(scheduled: datetime, now: datetime) -> datetime:
    """The `now` of a scheduled fire made at `now` (see LATE)."""
    return scheduled if abs(now - scheduled) <= LATE else now


# -- schedule ---------------------------------------------------------------------------------

def check_schedule(schedule: Iterable[str], now: datetime, where: str = "schedule") -> list[CronPattern]:
    """Each pattern parsed, and able to fire (its next time found); else InputError naming
    the pattern, as Taskcluster's `<message> in <pattern>`."""
    patterns = []
    for position, text in enumerate(schedule):
        try:
            pattern = CronPattern(text)
            pattern.next_after(now)
        except CronError as error:
            raise InputError(f"{where}[{position}]: {error} in {text!r}") from None
        patterns.append(pattern)
    return patterns


def next_fire(schedule: Iterable[str], after: datetime) -> datetime | None:
    """The first time after `after` that any pattern matches (None: no schedule). Patterns
    that overlap fire once at a time they share."""
    times = [CronPattern(text).next_after(after) for text in schedule]
    return min(times) if times else None


def advance(schedule: Iterable[str], fired: datetime, now: datetime) -> datetime | None:
    """The hook's next fire after firing the one due at `fired` at `now`: the first time after
    both (fires missed meanwhile are not made up one by one)."""
    return next_fire(schedule, max(fired, now))


def fires_between(schedule: Iterable[str], after: datetime, until: datetime) -> list[datetime]:
    """Every time in (`after`, `until`] the schedule fires, in order."""
    patterns, times = [CronPattern(text) for text in schedule], []
    moment = after
    while patterns:
        moment = min(pattern.next_after(moment) for pattern in patterns)
        if moment > until:
            break
        times.append(moment)
    return times


# -- fire ids ---------------------------------------------------------------------------------

def new_fire_key() -> str:
    """A hook's own key for its scheduled fires' taskIds (kept with it, never shown)."""
    return secrets.token_urlsafe(32)


def fire_task_id(fire_key: str, hook_group_id: str, hook_id: str, scheduled: datetime) -> str:
    """The taskId of the hook's fire scheduled at `scheduled`: always the same for the same
    hook and time, a valid v4 slugid (Taskcluster's taskId pattern), unguessable without the key."""
    message = f"{hook_group_id}/{hook_id}@{to_iso(scheduled)}".encode()
    return slugid_from_digest(hmac.new(fire_key.encode(), message, hashlib.sha256).digest())


# -- the JSON-e context -----------------------------------------------------------------------

def fire_context(fired_by: str, task_id: str, now: datetime, payload: object = None,
                 client_id: str | None = None) -> dict:
    """What the task template is rendered with, as Taskcluster gives it: `firedBy`, `taskId`,
    `now`; `payload` for every firing but a schedule's (the trigger's body or the Pulse
    message's); `clientId` for triggerHook (who triggered it)."""
    if fired_by not in FIRED_BY:
        raise ValueError(f"unknown firedBy {fired_by!r}")
    context = {"firedBy": fired_by, "taskId": task_id, "now": to_iso(now)}
    if fired_by != "schedule":
        context["payload"] = payload
    if client_id is not None and fired_by == "triggerHook":
        context["clientId"] = client_id
    return context


def requested_task_id(payload: object) -> str | None:
    """A trigger's payload may name the taskId to use (a slugid); InputError otherwise."""
    chosen = payload.get("taskId") if isinstance(payload, dict) else None
    if not chosen:                         # Taskcluster: only a truthy value counts
        return None
    if not is_slugid(chosen):
        raise InputError(f"payload.taskId: invalid taskId format: {chosen!r}")
    return chosen
