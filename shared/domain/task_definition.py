"""A task definition as the Queue stores it: every default filled in, the rules between
fields checked. Input has already passed the create-task-request schema (whose breaches are
InputValidationError); a rule between fields broken is an InputError, as in Taskcluster.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.domain.errors import InputError, InvalidInput
from shared.domain.ids import is_slugid
from shared.domain.timestamps import normalize_iso, parse_iso, to_iso

MAX_DEADLINE = timedelta(days=5)
CLOCK_SKEW = timedelta(minutes=15)
DEFAULT_EXPIRES_AFTER_DEADLINE = timedelta(days=365)

# Claim order, most urgent first (Taskcluster's schema refuses its old name `normal`).
PRIORITIES = ("highest", "very-high", "high", "medium", "low", "very-low", "lowest")

_DEFAULTS = {
    "schedulerId": "-",
    "projectId": "none",
    "dependencies": [],
    "requires": "all-completed",
    "routes": [],
    "priority": "lowest",
    "retries": 5,
    "scopes": [],
    "payload": {},
    "tags": {},
    "extra": {},
}


def priority_rank(priority: str) -> int:
    return PRIORITIES.index(priority)


def normalize(task_id: str, body: dict, now: datetime) -> dict:
    """The stored definition for `body`, or InvalidInput naming the field that breaks a rule."""
    if not is_slugid(task_id):
        raise InvalidInput(f"taskId: {task_id!r} is not a slugid")
    definition = {**{key: _copy(value) for key, value in _DEFAULTS.items()}, **body}
    definition.setdefault("taskGroupId", task_id)
    _fill_task_queue(definition)
    for field in ("created", "deadline"):
        definition[field] = normalize_iso(definition[field])
    _check_created_and_deadline(definition, now)
    # Defaulted only once the deadline is known to be near: a year after one in 9999 overflows.
    if "expires" in definition:
        definition["expires"] = normalize_iso(definition["expires"])
    else:
        definition["expires"] = to_iso(parse_iso(definition["deadline"]) + DEFAULT_EXPIRES_AFTER_DEADLINE)
    _check_expires(definition)
    _check_scopes(definition["scopes"])
    # A task may depend on itself (Taskcluster allows it): it then waits for scheduleTask.
    return definition


def _copy(value):
    return type(value)(value) if isinstance(value, (list, dict)) else value


def _fill_task_queue(definition: dict) -> None:
    given = definition.get("taskQueueId")
    if "provisionerId" in definition and "workerType" in definition:
        derived = f"{definition['provisionerId']}/{definition['workerType']}"
        if given and given != derived:
            raise InputError(f"taskQueueId: {given!r} does not match provisionerId/workerType {derived!r}")
        definition["taskQueueId"] = derived
    elif given:
        definition["provisionerId"], definition["workerType"] = given.split("/", 1)
    else:
        raise InputError("taskQueueId: give taskQueueId, or both provisionerId and workerType")


def _check_created_and_deadline(definition: dict, now: datetime) -> None:
    created, deadline = parse_iso(definition["created"]), parse_iso(definition["deadline"])
    if created > now + CLOCK_SKEW:
        raise InputError(f"created: {definition['created']} is more than {CLOCK_SKEW} in the future")
    if created < now - CLOCK_SKEW:
        raise InputError(f"created: {definition['created']} is more than {CLOCK_SKEW} in the past")
    if deadline <= now:
        raise InputError(f"deadline: {definition['deadline']} is in the past; it must be in the future")
    if deadline > now + MAX_DEADLINE + CLOCK_SKEW:
        raise InputError(f"deadline: {definition['deadline']} is more than 5 days in the future")
    if deadline <= created:
        raise InputError(f"deadline: {definition['deadline']} must be after created {definition['created']}")


def _check_expires(definition: dict) -> None:
    if parse_iso(definition["expires"]) < parse_iso(definition["deadline"]):
        raise InputError(f"expires: {definition['expires']} must not be before deadline {definition['deadline']}")


def _check_scopes(scopes: list[str]) -> None:
    for index, scope in enumerate(scopes):
        if scope.endswith("**"):
            raise InputError(f"scopes[{index}]: {scope!r} ends in more than one '*', which no scope may")


def same_definition(stored: dict, requested: dict) -> bool:
    """Whether a repeated createTask asks for the task that exists (both normalized)."""
    return stored == requested
