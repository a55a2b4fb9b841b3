"""`taskq secrets get|set|list`: the secrets service (Taskcluster's), by its official client on
the Queue's root URL and credentials. A value is printed only by `get`, to stdout; an error
never quotes one."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

import taskcluster

from taskq.connection import secrets
from taskq.output import PEOPLE, emit_json, emit_line
from taskq.pages import every_page


def get(args, queue) -> int:
    answer = secrets().get(args.name)
    if args.json:
        emit_json(answer)
    else:
        emit_line(json.dumps(answer["secret"], indent=2, sort_keys=True))
        PEOPLE.print(f"expires {answer['expires']}", markup=False)
    return 0


def set_value(args, queue) -> int:
    value = _value(args)
    expires = _expires(args.expires)
    secrets().set(args.name, {"secret": value, "expires": expires})
    if args.json:
        emit_json({"name": args.name, "expires": expires})
    else:
        PEOPLE.print(f"secret {args.name} set; it expires {expires}", markup=False)
    return 0


def list_names(args, queue) -> int:
    names = every_page(lambda query: secrets().list(query=query), "secrets")
    if args.json:
        emit_json({"secrets": names})
    else:
        for name in names:
            emit_line(name)
    return 0


def _value(args) -> dict:
    """The value: `--value` JSON, or the JSON of `--file` ('-': stdin). Its text is never
    shown in an error, only where it is wrong."""
    if args.value is not None:
        text, where = args.value, "--value"
    elif args.file == "-":
        text, where = sys.stdin.read(), "stdin"
    else:
        with open(args.file, encoding="utf-8") as file:
            text, where = file.read(), args.file
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where} is not JSON (line {error.lineno}, column {error.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object, as Taskcluster's secrets are")
    return value


def _expires(text: str) -> str:
    """An ISO time, or one from now in Taskcluster's words ('30 days', '1 year'), as the
    service takes it (UTC, milliseconds, `Z`)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            raise ValueError(text)
        return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except ValueError:
        pass
    try:
        return taskcluster.fromNowJSON(text)
    except Exception:   # the client raises a bare ValueError or a TaskclusterFailure
        raise ValueError(f"--expires: {text!r} is neither a date-time with its zone nor a duration such as "
                         "'30 days'") from None
