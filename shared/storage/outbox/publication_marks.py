"""Which events are out, so that an outbox need not be written again to be cleared.

Every event written into an outbox is stamped with its writer (this process, a random id)
and a number counting up in that process. The writer publishes its events right after its
write; it does not write the row again to clear them. It keeps a *mark* instead: the
highest number up to which every event it stamped is settled (published, or never stored
because its write was refused), and stores the mark in a row of its own every FLUSH_EVERY
seconds, one write for all the events since. An event is known published once its writer's
mark has passed it: exact for this process's own events, read from storage for other
writers' (at most once per REFRESH_EVERY for each).

So the next write of a row, which happens anyway (a claim after a creation, a resolution
after a claim), drops the events known published, keeps the others, and takes over those
still unknown GRACE after they were recorded: their writer has probably died, so they are
stamped as this process's and published by it right after the write. A row read without
being written (a sweep, a repair) publishes what is unknown after GRACE, and clears it
(see `services.event_publisher`). An event may be published twice (a writer whose mark is
not stored yet when another process takes over); its id is stable, so Service Bus duplicate
detection and consumers drop the copy. None is lost: a mark never passes an event before it
is out, and a write whose outcome is unknown holds the mark until its row is looked at
(`unsure`).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Protocol

from azure.data.tables import UpdateMode

from shared.domain.task_events import Event
from shared.domain.timestamps import parse_iso, utcnow
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.queries import row_or_none

GRACE = timedelta(seconds=10)   # how long a writer has to publish its events before others take over
FLUSH_EVERY = 0.5       # seconds between two writes of this process's mark
REFRESH_EVERY = 1.0     # seconds between two reads of another writer's mark
UNSURE_AFTER = 30.0     # seconds after which a write not known to have landed or failed is checked
TABLE = "PublicationMarks"
PARTITION = "writers"


class Outboxes(Protocol):
    """A table whose rows keep an outbox (tasks, groups, artifacts)."""

    def load_outbox(self, key: str) -> tuple[tuple[Event, ...], str] | None: ...

    def clear_outbox(self, key: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None: ...


class PublicationMarks:
    def __init__(self, account: StorageAccount, grace: timedelta = GRACE) -> None:
        self._account = account
        self.writer = uuid.uuid4().hex[:16]
        self.grace = grace
        self._lock = threading.Lock()
        self._next = 1
        self._open: dict[int, tuple[Outboxes, str, float]] = {}   # number -> row written, when stamped
        self._stored = 0
        self._others: dict[str, tuple[int, float]] = {}           # writer -> (mark, when read)

    # Writing an outbox.

    def prepare(self, table: Outboxes, key: str, events: tuple[Event, ...]) -> tuple[Event, ...]:
        """The outbox to write into `table`'s row `key` from `events` (those it holds, then
        the change's new ones, not stamped yet): new ones stamped as this process's, those
        known published dropped, those unknown past GRACE taken over."""
        if not events:
            return events
        self.refresh(self._overdue(events))
        prepared = []
        for event in events:
            if self.covered(event):
                continue
            if not event.writer or (event.writer != self.writer and self.overdue(event)):
                event = self._stamp(table, key, event)
            prepared.append(event)
        return tuple(prepared)

    def refused(self, events: tuple[Event, ...], error: BaseException | None = None,
                carried: tuple[Event, ...] = ()) -> None:
        """The write of `events` (`prepare`d from `carried`, the row's outbox as read, and the
        change's new events) was refused (the row changed, or exists): those it stamped were
        never stored. Not those it `carried`: an earlier write that landed stored them, and its
        writer publishes them. And none of them when the refusal came after an uncertain
        answer (`lost_responses.maybe_landed`): the write may have landed and the row been
        changed since by a writer that carried them over, so they stay open until their row
        is looked at (`unsure`), and are published from it if it holds them."""
        if lost_responses.maybe_landed(error):
            return
        kept = {(event.writer, event.seq) for event in carried if event.writer}
        self.settled([event for event in events if (event.writer, event.seq) not in kept])

    def settled(self, events) -> None:
        """This process's `events` are out, or were never stored."""
        with self._lock:
            for event in events:
                if event.writer == self.writer:
                    self._open.pop(event.seq, None)

    # Reading an outbox.

    def covered(self, event: Event) -> bool:
        """Whether `event` is known to be published."""
        if not event.writer:
            return False
        if event.writer == self.writer:
            with self._lock:
                return event.seq < self._next and event.seq not in self._open
        return self._others.get(event.writer, (0, 0.0))[0] >= event.seq

    def unknown(self, events: tuple[Event, ...]) -> list[Event]:
        """The events not known to be published, other writers' marks read again first
        where the events are overdue."""
        self.refresh(self._overdue(events))
        return [event for event in events if not self.covered(event)]

    def overdue(self, event: Event) -> bool:
        """Recorded more than GRACE ago: its writer should have published it by now."""
        return parse_iso(event.at) <= utcnow() - self.grace

    def mine_open(self, event: Event) -> bool:
        """One of this process's events, not out yet."""
        with self._lock:
            return event.writer == self.writer and event.seq in self._open

    def refresh(self, writers: set[str]) -> None:
        """Read the stored marks of other `writers`, those not read for REFRESH_EVERY."""
        now = time.monotonic()
        for writer in writers - {self.writer, ""}:
            if now - self._others.get(writer, (0, -REFRESH_EVERY))[1] < REFRESH_EVERY:
                continue
            row = row_or_none(self._table(), PARTITION, writer, select=["mark"])
            mark = int(row["mark"]) if row is not None else 0
            self._others[writer] = (mark, now)

    def _overdue(self, events: tuple[Event, ...]) -> set[str]:
        return {event.writer for event in events
                if event.writer and event.writer != self.writer and not self.covered(event) and self.overdue(event)}

    # This process's mark.

    def mark(self) -> int:
        with self._lock:
            return min(self._open) - 1 if self._open else self._next - 1

    def flush(self) -> bool:
        """Store this process's mark if it moved; whether it wrote."""
        mark = self.mark()
        if mark <= self._stored:
            return False
        self._table().upsert_entity({"PartitionKey": PARTITION, "RowKey": self.writer, "mark": str(mark)},
                                    mode=UpdateMode.REPLACE)
        self._stored = mark
        return True

    def unsure(self) -> dict[tuple[int, str], tuple[Outboxes, str]]:
        """The rows of this process's events still open UNSURE_AFTER seconds after they were
        stamped: a write whose outcome is unknown, or a publish that keeps failing."""
        cutoff = time.monotonic() - UNSURE_AFTER
        with self._lock:
            return {(id(table), key): (table, key) for table, key, stamped in self._open.values() if stamped < cutoff}

    def settle_row(self, table: Outboxes, key: str, stored: tuple[Event, ...]) -> None:
        """The row `key` was read as `stored` (and what of it was this process's is out):
        its events open for UNSURE_AFTER seconds that it does not hold were never stored,
        or were taken over by another writer."""
        cutoff = time.monotonic() - UNSURE_AFTER
        held = {event.seq for event in stored if event.writer == self.writer}
        with self._lock:
            for seq, (where, row, stamped) in list(self._open.items()):
                if where is table and row == key and stamped < cutoff and seq not in held:
                    del self._open[seq]

    def _stamp(self, table: Outboxes, key: str, event: Event) -> Event:
        with self._lock:
            seq = self._next
            self._next += 1
            self._open[seq] = (table, key, time.monotonic())
        return replace(event, writer=self.writer, seq=seq)

    def _table(self):
        return self._account.table(TABLE)
