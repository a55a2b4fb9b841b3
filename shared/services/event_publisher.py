"""Publishing what the outboxes hold: right after the write that recorded the events, by the
process that wrote them, and again by whoever finds them left over.

The events of a change are written in the changed row's outbox (see `storage.outbox`), so
none is lost when a process dies; this module gets them out:
- after a write, the writer publishes the events it wrote, then clears them from the row
  (events another writer left there are published too once they are older than GRACE:
  younger ones are still on their way out from their writer);
- a publish the bus refused is retried by this process every few seconds, from the row,
  for as long as the process lives;
- a process that died before publishing leaves its events in the row, and every path that
  brings a change back after a crash reads that row anyway: the next change of the task
  (a claim, a reclaim, a resolution, a sweep), a retried createTask, the repair of an
  unclaimed resolution, the claim row of a claimed one (which is removed only once the
  task's outbox is empty: see `resolution_handler`), the next member resolution or seal of
  a group. Each publishes what it finds that is older than GRACE.
An event may so be published twice (a writer slower than GRACE, a retry); its id is stable,
so consumers and Service Bus duplicate detection drop the copy.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Callable, Protocol

from ..domain.task_events import Event
from ..domain.timestamps import parse_iso, utcnow
from ..events.bus import EventBus
from .conditional import change_until_saved

log = logging.getLogger("queue.events")
GRACE = timedelta(seconds=10)
RETRY_EVERY = 2.0        # seconds between attempts at what the bus refused
MAX_REMEMBERED = 100_000  # rows this process retries; past that, rows keep their events for the recoveries


class Outboxes(Protocol):
    """A table whose rows keep an outbox (tasks, groups)."""

    def load_outbox(self, key: str) -> tuple[tuple[Event, ...], str] | None: ...

    def clear_outbox(self, key: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None: ...


class EventPublisher:
    def __init__(self, bus: EventBus | None, grace: timedelta = GRACE) -> None:
        self.bus = bus
        self.grace = grace
        self._refused: dict[tuple[int, str], tuple[Outboxes, str]] = {}
        self._lock = threading.Lock()
        self._retrier: threading.Thread | None = None

    def written(self, table: Outboxes, record, carried: tuple[Event, ...] = ()) -> bool:
        """After a write of `record` (whose outbox carried `carried` before it): publish its
        new events and the stale carried ones; True if its outbox is all out."""
        if not record.outbox:
            return True
        carried_ids = {event.id for event in carried}
        cutoff = utcnow() - self.grace
        due = [event for event in record.outbox if event.id not in carried_ids or parse_iso(event.at) <= cutoff]
        return self._publish(table, record.key, due, record.etag, record.outbox) and len(due) == len(record.outbox)

    def change(self, table: Outboxes, load: Callable, change: Callable, save: Callable) -> tuple[object, bool]:
        """`change_until_saved` on a row that keeps an outbox, then its events out: those the
        change added (and stale ones it carried), or, when it wrote nothing, the stale ones
        the row holds. The record as it ends up (None if there is none), and whether it changed."""
        read = [None]

        def tracked(record):
            read[0] = record
            return change(record)
        saved = change_until_saved(load, tracked, save)
        if saved is None:
            return None, False
        changed = saved is not read[0]   # an unchanged record comes back as read
        if changed:
            self.written(table, saved, read[0].outbox)
        elif saved.outbox:
            self.settle(table, saved.key, saved.outbox, saved.etag)
        return saved, changed

    def settle(self, table: Outboxes, key: str, outbox: tuple[Event, ...] | None = None,
               etag: str | None = None) -> bool:
        """Publish what a row's outbox (read now unless given) holds that is older than GRACE;
        True if nothing is left unpublished."""
        if self.bus is None:
            return True
        if outbox is None:
            found = table.load_outbox(key)
            if found is None:
                return True
            outbox, etag = found
        if not outbox:
            return True
        cutoff = utcnow() - self.grace
        stale = [event for event in outbox if parse_iso(event.at) <= cutoff]
        return self._publish(table, key, stale, etag, outbox) and len(stale) == len(outbox)

    def everything(self, table: Outboxes, record) -> bool:
        """Publish all of a row's outbox, whatever its age (a retried request: its first
        attempt may have died before publishing)."""
        return self._publish(table, record.key, list(record.outbox), record.etag, record.outbox)

    def _publish(self, table: Outboxes, key: str, events: list[Event], etag: str,
                 outbox: tuple[Event, ...]) -> bool:
        if not events:
            return True
        try:
            self.bus.publish(events)
        except Exception as error:   # the bus is down or refused: the row keeps them
            log.warning("events of %s not published (%s); retrying", key, error, extra={"key": key})
            self._retry_later(table, key)
            return False
        try:
            table.clear_outbox(key, [event.id for event in events], etag, outbox)
        except Exception:   # published: at worst they are published again later
            log.warning("events of %s published but not cleared", key, exc_info=True)
        return True

    def _retry_later(self, table: Outboxes, key: str) -> None:
        with self._lock:
            if len(self._refused) < MAX_REMEMBERED:
                self._refused[(id(table), key)] = (table, key)
            if self._retrier is None:
                self._retrier = threading.Thread(target=self._retry_forever, name="event-retry", daemon=True)
                self._retrier.start()

    def _retry_forever(self) -> None:
        while True:
            time.sleep(RETRY_EVERY)
            try:
                self.retry_refused()
            except Exception:   # storage unreachable too: the rows stay remembered for the next pass
                log.warning("retrying refused events failed; trying again", exc_info=True)

    def retry_refused(self) -> int:
        """Publish again, from their rows, the events the bus refused; how many rows are done.
        Stops at the first refusal: the bus is still down."""
        with self._lock:
            waiting = list(self._refused.items())
        done = 0
        for remembered, (table, key) in waiting:
            found = table.load_outbox(key)
            if found and found[0]:
                try:
                    self.bus.publish(found[0])
                except Exception:
                    return done
                table.clear_outbox(key, [event.id for event in found[0]], found[1], found[0])
            with self._lock:
                self._refused.pop(remembered, None)
            done += 1
        return done
