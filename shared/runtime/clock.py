"""The present, for what is driven by the calendar (the hooks' schedules): the system's clock,
or one a test or a drill steps through a day in seconds.

`HOOKS_CLOCK_FILE` names a file holding an instant (RFC 3339, e.g. `2031-03-01T00:00:00Z`):
while it is set, the hooks service and its timer read the present from that file at every
call, so a test moves time by writing it, through a real host and across a restart. Unset
(as in every deployment), the system's clock. Only the hooks read it: the Queue keeps the
system's time, and a scheduled fire made at a simulated time is created at the real one
(see `domain.hooks.LATE`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

from shared.domain.timestamps import parse_iso, utcnow

Clock = Callable[[], datetime]


def clock_of(path: str) -> Clock:
    """The system's clock (`path` empty), or the instant the file at `path` holds."""
    if not path:
        return utcnow
    file = Path(path)
    return lambda: parse_iso(file.read_text().strip())
