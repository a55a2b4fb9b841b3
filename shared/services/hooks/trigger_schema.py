"""A hook's `triggerSchema`: checked when the hook is written (it must be a JSON schema) and
applied to each trigger's payload (triggerHook, triggerHookWithToken, a Pulse message's body),
with a 400 that names each offending field, as Taskcluster refuses them (it lists them all).

The default (`domain.hooks.DEFAULT_TRIGGER_SCHEMA`, Taskcluster's) accepts only an empty object: a hook takes no payload unless it
says which. Defaults in the schema are not applied to the payload (Taskcluster's validator
does not either).
"""

from __future__ import annotations

from jsonschema import SchemaError

from shared.domain.errors import InputError
from shared.validation import MAX_MESSAGES, field_path, user_validator


def check_trigger_schema(schema: object, where: str = "triggerSchema") -> dict:
    if not isinstance(schema, dict):
        raise InputError(f"{where}: must be an object (a JSON schema)")
    try:
        user_validator(schema)
    except SchemaError as error:
        inside = ".".join(str(part) for part in error.absolute_path)
        raise InputError(f"{where}{'.' + inside if inside else ''}: is not a valid JSON schema: "
                           f"{error.message}") from None
    return schema


def check_trigger_payload(schema: dict, payload: object) -> None:
    """InputError listing every way `payload` breaks `schema`, each under `payload.<field>`."""
    validator = user_validator(schema)
    errors = sorted(validator.iter_errors(payload), key=lambda error: [str(part) for part in error.absolute_path])
    if errors:
        lines = [_line(error) for error in errors[:MAX_MESSAGES]]
        raise InputError("\n".join(lines))


def _line(error) -> str:
    path = field_path(error)
    if path == "(root)":
        where = "payload"
    else:
        where = "payload" + ("" if path.startswith("[") else ".") + path
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return f"{where}: {message}"
