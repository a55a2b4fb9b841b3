"""Firing a hook, as Taskcluster's hooks service does: its task rendered from the template
with JSON-e, created by the Queue with the hook's role, and the fire recorded, success or
error, for listLastFires.

The task is created in this process, through the Queue's own createTask (the same checks of
the definition), authorized against what the role `assume:hook-id:<hookGroupId>/<hookId>`
expands to (`role_scopes`, from the deployment's roles), and nothing of the caller's or of
the service's own. A scheduled fire's taskId is derived from the hook and the time (see
`domain.hooks`); if that task exists already the fire was made before (a timer that ran
twice, a host that died before moving the hook on) and is recorded again, not repeated.

Errors are Taskcluster's: the role lacking a scope of createTask is a 403 naming the role; any
other refusal of createTask, and a template that does not render, is a 400 InputError saying
so; a trigger payload that breaks the triggerSchema is refused before anything is rendered
(and, as there, not recorded as a fire).
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import datetime
from typing import Callable

from shared.auth import expressions
from shared.auth.clients import Caller
from shared.auth.errors import AuthError, InsufficientScopes
from shared.auth.refusals import insufficient
from shared.auth.scopes import ScopeSet
from shared.domain.errors import Conflict, InputError, QueueError
from shared.domain.hooks import fire_context, fire_task_id, fire_time, hook_role, requested_task_id
from shared.domain.ids import new_slugid
from shared.domain.task_scopes import CREATE_TASK, task_creation
from shared.domain.timestamps import to_iso, utcnow
from shared.services.hooks.hook_secrets import HookSecrets
from shared.services.hooks.task_template import TemplateFailed, render_task
from shared.services.hooks.trigger_schema import check_trigger_payload
from shared.services.tasks.task_calls import TaskCalls
from shared.storage.tables.hook_fire_table import HookFireTable, LastFire
from shared.storage.tables.hook_table import HookRecord
from shared.validation import validate

log = logging.getLogger("hooks.fires")
Clock = Callable[[], datetime]


class HookFiring:
    def __init__(self, task_calls: TaskCalls, role_scopes: Callable[[str], ScopeSet], fires: HookFireTable,
                 secrets: HookSecrets, clock: Clock) -> None:
        self.task_calls = task_calls
        self.role_scopes = role_scopes
        self.fires = fires
        self.secrets = secrets
        self.clock = clock

    def trigger(self, hook: HookRecord, fired_by: str, payload: dict, client_id: str | None = None) -> dict:
        """triggerHook, triggerHookWithToken: Taskcluster's trigger-hook-response."""
        check_trigger_payload(hook.definition["triggerSchema"], payload)
        task_id = requested_task_id(payload) or new_slugid()
        created = self._fire(hook, fired_by, task_id, utcnow(), None, payload, client_id)
        return {"taskId": created, "status": {"taskId": created}} if created else {}

    def scheduled(self, hook: HookRecord, scheduled: datetime) -> str | None:
        """The fire due at `scheduled`: its taskId (None if the template declined)."""
        task_id = fire_task_id(self.secrets.fire_key(hook), hook.hook_group_id, hook.hook_id, scheduled)
        return self._fire(hook, "schedule", task_id, fire_time(scheduled, utcnow()), scheduled)

    def _fire(self, hook: HookRecord, fired_by: str, task_id: str, now: datetime, scheduled: datetime | None,
              payload: object = None, client_id: str | None = None) -> str | None:
        fire = LastFire(hook.hook_group_id, hook.hook_id, fired_by, task_id, to_iso(self.clock()), "success",
                        at=to_iso(scheduled) if scheduled else "")
        try:
            task = render_task(hook.definition["task"], fire_context(fired_by, task_id, now, payload, client_id))
            if task is None:
                log.info("hook %s fired by %s declined to create a task", hook.key, fired_by)
                return None
            if scheduled is None or not self._exists(task_id):
                self._create(hook, task_id, task, scheduled is not None)
        except Exception as error:
            self._record(replace(fire, result="error", error=_recorded(error)), scheduled is not None)
            raise _refusal(hook, error) from None
        self._record(fire, scheduled is not None)
        log.info("hook %s fired by %s: task %s", hook.key, fired_by, task_id, extra={"taskId": task_id})
        return task_id

    def _create(self, hook: HookRecord, task_id: str, task: dict, repeatable: bool) -> None:
        try:
            validate("create-task-request", task)
            self.task_calls.create(task_id, task, self._as_role(hook_role(hook.hook_group_id, hook.hook_id)))
        except Conflict:
            if not (repeatable and self._exists(task_id)):
                raise   # a scheduled fire made again at another time: the first made the task

    def _as_role(self, role_scope: str) -> Callable[[dict], None]:
        """createTask's check of a definition (see `domain.task_scopes`), against the role alone."""
        caller = Caller(role_scope.removeprefix("assume:"), self.role_scopes(role_scope))

        def authorize(definition: dict) -> None:
            required = expressions.render(CREATE_TASK, task_creation(definition))
            if not caller.scopes.satisfies(required):
                raise InsufficientScopes(insufficient(caller, required))
        return authorize

    def _exists(self, task_id: str) -> bool:
        return self.task_calls.task_table.load(task_id) is not None

    def _record(self, fire: LastFire, again_if_lost: bool) -> None:
        """Record the fire. A scheduled one that cannot be is made again by the timer's next run
        (its task exists by then: only the record is written); a trigger's task stands, and an
        error answered to it would have its caller create another, so its record is given up."""
        try:
            self.fires.record(fire)
        except Exception:
            if again_if_lost:
                raise
            log.exception("hook %s/%s: the fire of task %s was not recorded", fire.hook_group_id, fire.hook_id,
                          fire.task_id)


def _refusal(hook: HookRecord, error: Exception) -> Exception:
    """What the caller is told, as Taskcluster's triggerHook tells it."""
    if isinstance(error, InsufficientScopes):
        return InsufficientScopes(f"The role `hook-id:{hook.hook_group_id}/{hook.hook_id}` does not have sufficient "
                                  f"scopes to create the task:\n\n{error.message}")
    if isinstance(error, TemplateFailed):
        return InputError(f"While firing hook:\n\n{error}")
    if isinstance(error, (QueueError, AuthError)) and error.code != "InternalServerError":
        return InputError(f"While calling createTask: {error.code}\n\n{error.message}")
    return error   # a storage outage: a 500, as any


def _recorded(error: Exception) -> str:
    """A fire's error as listLastFires shows it: a refusal's code and message as JSON (as
    Taskcluster keeps createTask's), a template's error as its text."""
    if isinstance(error, TemplateFailed):
        return f"Error: {error}"
    if isinstance(error, (QueueError, AuthError)):
        return json.dumps({"name": type(error).__name__, "code": error.code, "message": error.message}, indent=2)
    return json.dumps({"name": type(error).__name__, "message": "Internal error; the fire may be retried"})
