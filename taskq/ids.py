"""Checking the ids people type, before any call: the Queue's own refusal of a malformed id
quotes the slugid regular expression, which tells a person nothing."""

from __future__ import annotations

import argparse
import re

# Taskcluster's slugid: 22 URL-safe base64 characters of a version-4 UUID.
SLUGID = re.compile(r"^[A-Za-z0-9_-]{8}[Q-T][A-Za-z0-9_-][CGKOSWaeimquy26-][A-Za-z0-9_-]{10}[AQgw]$")


def slug_argument(kind: str):
    """An argparse `type` accepting a `kind` id (taskId, taskGroupId) and explaining what one is."""
    def check(value: str) -> str:
        if SLUGID.match(value):
            return value
        if re.fullmatch(r"[A-Za-z0-9_-]{22}", value):
            shape = "22 characters of the right alphabet, but not a slugid Taskcluster makes"
        else:
            shape = f"{len(value)} characters" + ("" if re.fullmatch(r"[A-Za-z0-9_-]*", value)
                                                  else ", some not letters, digits, '-' or '_'")
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a {kind}: a {kind} is a slugid, 22 characters of letters, digits, '-' and '_' "
            f"(as `taskq create` prints it, or `taskcluster.slugId()` makes it); this is {shape}")
    check.__name__ = kind   # argparse names the type in its messages
    return check
