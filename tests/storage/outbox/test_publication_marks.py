"""Publication marks (`shared/storage/outbox/publication_marks.py`) on the in-memory account: how
events are stamped, when a writer's mark moves, and what the next write of a row keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.domain.task_events import Event
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.outbox import publication_marks
from shared.storage.outbox.publication_marks import PARTITION, TABLE, PublicationMarks
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount


class Row:
    """A table whose outbox nobody reads here."""

    def load_outbox(self, key):
        return None

    def clear_outbox(self, key, published, etag, kept=None):
        pass


ROW = Row()


def event(name: str, age: timedelta = timedelta(0)) -> Event:
    return Event("task-pending", f"primary.{name}", {}, name, to_iso(utcnow() - age))


@pytest.fixture
def account() -> MemoryAccount:
    return MemoryAccount(unique_prefix())


def stored_mark(account: MemoryAccount, marks: PublicationMarks) -> int | None:
    rows = [row for row in account.table(TABLE).query_entities("PartitionKey eq @p", parameters={"p": PARTITION})
            if row["RowKey"] == marks.writer]
    return int(rows[0]["mark"]) if rows else None


def test_the_mark_passes_only_events_that_are_out_or_were_never_stored(account):
    marks = PublicationMarks(account)
    first, second, third = marks.prepare(ROW, "k", (event("a"), event("b"), event("c")))
    assert [e.seq for e in (first, second, third)] == [1, 2, 3] and {e.writer for e in (first, second)} == {marks.writer}
    marks.settled([second, third])      # out of order: the first is still on its way
    assert marks.mark() == 0 and not marks.covered(first) and marks.covered(second)
    marks.refused([first])              # its write was refused: nothing to publish
    assert marks.mark() == 3
    assert marks.flush() and stored_mark(account, marks) == 3
    assert not marks.flush()            # nothing moved: nothing written


def test_a_refused_write_settles_what_it_stamped_not_what_it_carried(account):
    """The events a refused write carried from the row as read were stored by an earlier write
    that landed: they stay open for that write to publish (taken for never stored, the next
    writer of the row would drop them unpublished)."""
    marks = PublicationMarks(account)
    stored = marks.prepare(ROW, "k", (event("landed"),))           # a write that landed, not out yet
    attempt = marks.prepare(ROW, "k", stored + (event("refused"),))  # the next, from the same row, refused
    marks.refused(attempt, carried=stored)
    assert marks.mine_open(stored[0]) and not marks.covered(stored[0])
    assert not marks.mine_open(attempt[1]) and marks.covered(attempt[1])


def test_another_process_knows_an_event_out_once_its_writer_stored_its_mark(account):
    writer, reader = PublicationMarks(account), PublicationMarks(account)
    [out] = writer.prepare(ROW, "k", (event("a"),))
    writer.settled([out])
    assert not reader.covered(out)      # the writer has not stored its mark yet
    writer.flush()
    reader.refresh({writer.writer})
    assert reader.covered(out)


def test_the_next_write_drops_what_is_out_keeps_young_unknowns_and_takes_over_overdue_ones(account):
    writer, other = PublicationMarks(account), PublicationMarks(account)
    out, young, old = writer.prepare(ROW, "k", (event("out"), event("young"), event("old", timedelta(minutes=1))))
    writer.settled([out])
    writer.flush()
    kept = other.prepare(ROW, "k", (out, young, old, event("new")))
    assert [e.id for e in kept] == ["young", "old", "new"]
    assert kept[0] == young                                     # still its writer's to publish
    assert [e.writer for e in kept[1:]] == [other.writer] * 2   # taken over, and new: the other's now
    assert all(other.mine_open(e) for e in kept[1:])


def test_a_row_looked_at_after_an_unknown_write_settles_what_it_does_not_hold(account, monkeypatch):
    marks = PublicationMarks(account)
    lost, landed = marks.prepare(ROW, "k", (event("lost"), event("landed")))
    assert marks.unsure() == {}         # too recent to tell
    monkeypatch.setattr(publication_marks, "UNSURE_AFTER", 0)
    assert list(marks.unsure().values()) == [(ROW, "k")]
    marks.settle_row(ROW, "k", (landed,))
    assert marks.mark() == 1 and marks.mine_open(landed)   # the row holds this one: still to publish
    marks.settled([landed])
    assert marks.mark() == 2
