"""Publishing what the outboxes hold: right after the write that recorded the events, by the
process that wrote them, and again by whoever finds them left over.

The events of a change are written in the changed row's outbox (see `storage.outbox`), so
none is lost when a process dies; this module gets them out:
- after a write, the writer publishes the events it wrote (and those it took over from a
  writer that did not publish them: see `storage/outbox/publication_marks`), and notes them out
  in its mark, which it stores every half second, instead of writing the row again;
- a publish the bus refused is retried by this process every few seconds, from the row,
  for as long as the process lives; so is the row of a write whose outcome was unknown;
- a process that died before publishing leaves its events in the row, and every path that
  brings a change back after a crash reads that row anyway: the next change of the task
  (a claim, a reclaim, a resolution, a sweep), a retried createTask, the repair of an
  unclaimed resolution, the claim row of a claimed one (which is removed only once the
  task's events are out: see `dependency_resolver`), the next member resolution or seal of
  a group. Each publishes what it finds that is not known to be out and older than GRACE,
  and clears it from the row.
An event may so be published twice (a writer slower than GRACE, a retry); its id is stable,
so consumers and Service Bus duplicate detection drop the copy.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from shared.domain.task_events import Event
from shared.events.bus import EventBus
from shared.runtime.periodic import every
from shared.storage.outbox.publication_marks import FLUSH_EVERY, Outboxes, PublicationMarks
from shared.storage.patterns.conditional_writes import change_until_saved

log = logging.getLogger("queue.events")
RETRY_EVERY = 2.0        # seconds between attempts at what the bus refused
MAX_REMEMBERED = 100_000  # rows this process retries; past that, rows keep their events for the recoveries


class EventPublisher:
    def __init__(self, bus: EventBus | None, marks: PublicationMarks) -> None:
        self.bus = bus
        self.marks = marks
        self._refused: dict[tuple[int, str], tuple[Outboxes, str]] = {}
        self._lock = threading.Lock()
        self._upkeep: threading.Thread | None = None
        self._retried = time.monotonic()

    @property
    def publishing(self) -> bool:
        """Whether events are kept and published at all (not without a bus)."""
        return self.bus is not None

    def written(self, table: Outboxes, record) -> bool:
        """After a write of `record`: publish the events it holds that this process stamped and
        that are not out yet (see `_due`); True if its outbox is all out."""
        if not record.outbox:
            return True
        self._keep_up()
        self._publish(table, record.key, self._due(record), record.etag, record.outbox)
        return all(self.marks.covered(event) for event in record.outbox)

    def written_together(self, table: Outboxes, records: list) -> None:
        """`written` for rows written together: their events in one
        publication (a fan-out's children scheduled a transaction at a time)."""
        due = {record.key: self._due(record) for record in records}
        events = [event for events in due.values() for event in events]
        if not events or self.bus is None:
            return
        self._keep_up()
        try:
            self.bus.publish(events)
        except Exception as error:   # the bus is down or refused: the rows keep them
            log.warning("events of %d rows not published (%s); retrying", len(due), error)
            for key, events in due.items():
                if events:
                    self._retry_later(table, key)
            return
        self.marks.settled(events)

    def _due(self, record) -> list[Event]:
        """What a write of `record` publishes: the events it stamped (the change's, and those
        it took over), and this process's own carried ones not out yet, before them. Another
        of its threads may be publishing those at this moment (a fan-out's, whose children can
        be claimed once their rows are written): published again, with their ids, rather than
        after this write's own, and before a resolution that would otherwise keep its claim
        row for the claim sweep to announce again."""
        return [event for event in record.outbox if self.marks.mine_open(event)]

    def change(self, table: Outboxes, load: Callable, change: Callable, save: Callable,
               first: object | None = None) -> tuple[object, bool]:
        """`change_until_saved` on a row that keeps an outbox (from `first`, if given), then its
        events out: those the change added (and those it took over), or, when it wrote
        nothing, the overdue ones the row holds. The record as it ends up (None if there is
        none), and whether it changed."""
        read = [None]

        def tracked(record):
            read[0] = record
            return change(record)
        saved = change_until_saved(load, tracked, save, first)
        if saved is None:
            return None, False
        changed = saved is not read[0]   # an unchanged record comes back as read
        if changed:
            self.written(table, saved)
        elif saved.outbox:
            self.settle(table, saved.key, saved.outbox, saved.etag)
        return saved, changed

    def settle(self, table: Outboxes, key: str, outbox: tuple[Event, ...] | None = None,
               etag: str | None = None) -> bool:
        """Publish what a row's outbox (read now unless given) holds that is not known to be
        out and older than GRACE; True if nothing is left that is not known to be out."""
        if self.bus is None:
            return True
        if outbox is None:
            found = table.load_outbox(key)
            if found is None:
                return True
            outbox, etag = found
        unknown = self.marks.unknown(outbox)
        overdue = [event for event in unknown if self.marks.overdue(event)]
        return self._publish(table, key, overdue, etag, outbox) and len(overdue) == len(unknown)

    def everything(self, table: Outboxes, record) -> bool:
        """Publish all of a row's outbox not known to be out, whatever its age (a retried
        request: its first attempt may have died before publishing)."""
        return self._publish(table, record.key, self.marks.unknown(record.outbox), record.etag, record.outbox)

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
        self.marks.settled(events)
        # Other writers' events: their marks will never pass them, so they leave the row.
        taken = [event.id for event in events if event.writer != self.marks.writer]
        if taken:
            try:
                table.clear_outbox(key, taken, etag, outbox)
            except Exception:   # published: at worst they are published again later
                log.warning("events of %s published but not cleared", key, exc_info=True)
        return True

    def _retry_later(self, table: Outboxes, key: str) -> None:
        with self._lock:
            if len(self._refused) < MAX_REMEMBERED:
                self._refused[(id(table), key)] = (table, key)
        self._keep_up()

    def _keep_up(self) -> None:
        """Start the thread that stores this process's mark and retries what is left."""
        if self._upkeep is not None:
            return
        with self._lock:
            if self._upkeep is None:
                self._upkeep = every(FLUSH_EVERY, self, "upkeep", "event upkeep")

    def upkeep(self) -> None:
        """Store the mark every FLUSH_EVERY; every RETRY_EVERY, retry what is left."""
        self.marks.flush()
        if time.monotonic() - self._retried >= RETRY_EVERY:
            self._retried = time.monotonic()
            self.retry_refused()

    def retry_refused(self) -> int:
        """Publish again, from their rows, the events the bus refused, and those of writes
        whose outcome was not known; how many rows are done. Stops at the first refusal:
        the bus is still down."""
        with self._lock:
            waiting = dict(self._refused)
        waiting.update(self.marks.unsure())
        done = 0
        for remembered, (table, key) in waiting.items():
            found = table.load_outbox(key)
            stored = found[0] if found else ()
            due = [event for event in self.marks.unknown(stored)
                   if event.writer == self.marks.writer or self.marks.overdue(event)]
            if found and not self._publish(table, key, due, found[1], stored):
                return done
            self.marks.settle_row(table, key, stored)
            with self._lock:
                self._refused.pop(remembered, None)
            done += 1
        return done

