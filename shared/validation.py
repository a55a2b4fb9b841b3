"""Checking bodies against the JSON schemas in `schemas/v1`, with messages that name the field.

The schemas are our public contract: requests are validated before anything else happens,
and the test suite checks every response against the response schemas.

Two validators of the same schemas: jsonschema-rs (compiled, about 80 times faster: 3 us
against 240 us for a createTask body, which was a tenth of the host's CPU for a createTask)
says whether a body is valid; only a body it refuses is checked again by jsonschema, whose
errors make the messages users see. So the fast one decides what is accepted, with the same
format checks (ours, handed to it) and ECMA-262 patterns (its own), and a refusal is always
worded by the slow one, which has the last word: a body it finds valid is accepted.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from referencing import Registry, Resource

from shared.domain.errors import InvalidInput
from shared.domain.timestamps import parse_iso

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas" / "v1"
BASE_URI = "https://schemas.local/queue/v1/"
MAX_MESSAGES = 20

_formats = FormatChecker(formats=())


@_formats.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    """RFC 3339 with a time zone, in the years Python represents (jsonschema would otherwise
    skip the check silently). Non-strings are the `type` keyword's business."""
    if isinstance(value, str):
        parse_iso(value)
    return True


@lru_cache(maxsize=None)
def ecma_regex(pattern: str) -> re.Pattern:
    r"""`pattern` compiled with ECMA-262's meaning, which the schemas (published, standard
    JSON Schema) are written in. Python's `$` also matches before a final newline, so
    `^[a-z]+$` would pass `"abc\n"` to storage; ECMA's `$` (no multiline flag) is Python's
    `\Z`. ASCII: ECMA's `\d` and `\w` are ASCII, Python's are Unicode."""
    translated, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = r"\Z"
        translated.append(char)
    return re.compile("".join(translated), re.ASCII)


def _pattern(validator, pattern: str, instance, schema):
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@_formats.checks("email")
def _is_email(value: object) -> bool:
    """As JSON Schema's format checkers take it (a hook owner's address): something@something."""
    return not isinstance(value, str) or "@" in value


def _passes(check):
    """A format check as jsonschema-rs takes it: a string in, True or False out."""
    def passes(value: str) -> bool:
        try:
            return bool(check(value))
        except ValueError:
            return False
    return passes


# Every format jsonschema knows, with date-time as strict as ours (for users' own schemas).
_user_formats = FormatChecker()
_user_formats.checks("date-time", raises=ValueError)(_is_date_time)
_Validator = validators.extend(Draft202012Validator, {"pattern": _pattern})


@lru_cache(maxsize=1)
def _schemas() -> dict[str, dict]:
    """Every schema by its URI (a service's own schemas sit in a folder of its name)."""
    return {BASE_URI + path.relative_to(SCHEMA_DIR).as_posix(): json.loads(path.read_text())
            for path in SCHEMA_DIR.rglob("*.json")}


@lru_cache(maxsize=1)
def _registry() -> Registry:
    return Registry().with_resources((uri, Resource.from_contents(schema)) for uri, schema in _schemas().items())


@lru_cache(maxsize=None)
def _validator(schema_name: str) -> Draft202012Validator:
    schema = _registry().contents(BASE_URI + schema_name + ".json")
    return _Validator(schema, registry=_registry(), format_checker=_formats)


@lru_cache(maxsize=1)
def _fast_registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry(list(_schemas().items()))


@lru_cache(maxsize=None)
def _fast_validator(schema_name: str):
    """The compiled validator of `schema_name` (see the module's docstring)."""
    return jsonschema_rs.validator_for(
        _schemas()[BASE_URI + schema_name + ".json"], registry=_fast_registry(), validate_formats=True,
        formats={"date-time": _passes(_is_date_time), "email": _passes(_is_email)})


def field_path(error) -> str:
    """Where in the body a violation is: `tasks.build.task.payload[0]`, or `(root)`."""
    parts = []
    for part in error.absolute_path:
        parts.append(f"[{part}]" if isinstance(part, int) else ("." if parts else "") + str(part))
    return "".join(parts) or "(root)"


# What a violation says of a value it must not show: which rule it breaks, not what it is.
_NAMES_ONLY = ("required", "additionalProperties")   # these messages name properties alone


def _describe(error, schema: dict, hidden: tuple[str, ...] = ()) -> str:
    custom = schema.get("errorMessage", {}).get(error.validator) if not error.absolute_path else None
    if custom:
        return custom
    path = list(error.absolute_path)
    if hidden and error.validator not in _NAMES_ONLY and (not path or path[0] in hidden):
        return f"{field_path(error)}: breaks the schema's '{error.validator}' rule (the value is not shown)"
    message = error.message
    if error.validator == "format" and error.cause is not None:  # say why, e.g. out of range
        message = f"{message}: {error.cause}"
    if len(message) > 300:
        message = message[:300] + "..."
    return f"{field_path(error)}: {message}"


def user_validator(schema: dict):
    """A validator for a schema a user gave (a hook's triggerSchema), of the draft it names
    (draft-07 when it names none, as Taskcluster's), with ECMA patterns and format checks;
    SchemaError if it is not a valid schema."""
    kind = validators.validator_for(schema, default=validators.Draft7Validator)
    kind.check_schema(schema)
    return validators.extend(kind, {"pattern": _pattern})(schema, format_checker=_user_formats)


def violations(schema_name: str, body: object, hidden: tuple[str, ...] = ()) -> list[str]:
    """Every violation, one line each; those in the top-level fields `hidden` (and of the body
    as a whole) name the rule broken without quoting the value."""
    if _fast_validator(schema_name).is_valid(body):
        return []
    validator = _validator(schema_name)
    errors = sorted(validator.iter_errors(body), key=lambda error: list(map(str, error.absolute_path)))
    return [_describe(error, validator.schema, hidden) for error in errors]


def validate(schema_name: str, body: object, where: str = "", hidden: tuple[str, ...] = ()) -> None:
    """Raise InvalidInput listing every violation of `schema_name`, one per line; `where`
    prefixes the paths when `body` sits inside a larger request (e.g. `tasks.build.task`);
    `hidden`: see `violations`."""
    found = violations(schema_name, body, hidden)
    if where:
        found = [f"{where}.{line}" if not line.startswith("(root)") else f"{where}{line[6:]}" for line in found]
    if found:
        shown = found[:MAX_MESSAGES] + ([f"... and {len(found) - MAX_MESSAGES} more"] if len(found) > MAX_MESSAGES else [])
        raise InvalidInput("\n".join(shown))


def check_response(schema_name: str, body: object) -> list[str]:
    """Every way `body` breaks the response schema (empty when it conforms)."""
    return violations(schema_name, body)
