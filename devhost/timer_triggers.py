"""Timer triggers: each function on its own thread, never two runs of one at once."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

from azure.functions.timer import TimerRequest

from devhost.ncrontab import Schedule

log = logging.getLogger("devhost.timer")


class TimerRunner:
    def __init__(self, name: str, function, schedule: Schedule, run_on_startup: bool, stop: threading.Event) -> None:
        self.name = name
        self.function = function
        self.schedule = schedule
        self.run_on_startup = run_on_startup
        self.stop = stop
        self.thread = threading.Thread(target=self._loop, name=f"timer-{name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        if self.run_on_startup:
            self._fire(past_due=False)
        due = None
        while not self.stop.is_set():
            now = datetime.now(timezone.utc)
            # From the last due time at least: a wait that ends a hair early (wall clock against
            # the monotonic clock) must not fire the same occurrence twice.
            due = self.schedule.next_after(max(now, due) if due else now)
            if self.stop.wait((due - now).total_seconds()):
                return
            late = (datetime.now(timezone.utc) - due).total_seconds() > 1
            self._fire(past_due=late)

    def _fire(self, past_due: bool) -> None:
        try:
            self.function(TimerRequest(past_due=past_due))
        except Exception:  # a failing run is logged; the timer keeps its schedule, as in Azure
            log.exception("timer function %s failed", self.name)
