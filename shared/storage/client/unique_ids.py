"""Ids unique to one write or one request body, without a system call each.

`uuid.uuid4()` reads the operating system's random source on every call: under 16 parallel
createTask callers that was 3% of the host's CPU (a write id on every row written, two
boundaries in every transaction). An id here is a random prefix drawn once per process (and
again in a forked child) and a counter: unique across processes by the prefix's 64 random
bits, within one by the counter.
"""

from __future__ import annotations

import itertools
import os
import secrets

_prefix = secrets.token_hex(8)
_counter = itertools.count()


def unique_id() -> str:
    return f"{_prefix}{next(_counter):012x}"   # next() on a count is atomic under the GIL


def _redraw() -> None:
    global _prefix, _counter
    _prefix, _counter = secrets.token_hex(8), itertools.count()


os.register_at_fork(after_in_child=_redraw)
