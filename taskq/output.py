"""What commands print: JSON for scripts (`--json`), short lines for people, errors as one line."""

from __future__ import annotations

import json
import sys

from rich.console import Console

# Progress and notes go to stderr so that stdout stays what a script reads.
PEOPLE = Console(stderr=True, highlight=False, soft_wrap=True)  # a long line stays one line in a log


def emit_json(value) -> None:
    sys.stdout.write(json.dumps(value, sort_keys=True) + "\n")
    sys.stdout.flush()


def emit_line(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def first_line(message) -> str:
    """The first line with something on it: the server's messages may span many."""
    return next((line.strip() for line in str(message).splitlines() if line.strip()), "")


def error_line(code: str, message: str) -> str:
    """One line, whatever the server's message spans: `error: <code>: <first line>`."""
    return f"error: {code}: {first_line(message)}" if code else f"error: {first_line(message)}"
