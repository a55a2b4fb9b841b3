"""The one read-change-conditional-write loop."""

import pytest

from shared.domain.errors import QueueError
from shared.storage.errors import ChangedSinceRead
from shared.storage.patterns.conditional_writes import MAX_ATTEMPTS, change_until_saved, until_written


def test_a_refused_write_is_decided_again_on_a_fresh_read():
    reads, written = iter([1, 2, 3]), []

    def write(record):
        if record < 3:
            raise ChangedSinceRead("row")
        written.append(record)
        return record * 10
    assert until_written(lambda: next(reads), write) == 30 and written == [3]


def test_the_first_record_saves_a_read_and_a_refusal_may_carry_the_fresh_one():
    reads = []

    def write(record):
        if record == "remembered":
            raise ChangedSinceRead("row", fresh="carried")
        return record
    assert until_written(lambda: reads.append(1) or "read", write, first="remembered") == "carried"
    assert reads == []


def test_after_max_attempts_the_loop_gives_up_as_its_caller_says():
    def write(record):
        raise ChangedSinceRead("row")
    attempts = []
    assert until_written(lambda: attempts.append(1) or 0, write, gave_up=lambda: "given up") == "given up"
    assert len(attempts) == MAX_ATTEMPTS
    with pytest.raises(QueueError, match="changing too quickly"):
        until_written(lambda: 0, write)


def test_an_unchanged_record_is_not_written_unless_touched():
    saved = []
    assert change_until_saved(lambda: {"n": 1}, lambda record: record, lambda r: saved.append(r) or r) == {"n": 1}
    assert saved == []
    change_until_saved(lambda: {"n": 1}, lambda record: record, lambda r: saved.append(r) or r, touch=True)
    assert saved == [{"n": 1}]
    assert change_until_saved(lambda: None, lambda record: record, saved.append) is None
