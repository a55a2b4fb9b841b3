"""Timestamps: every instant Python represents is written in Taskcluster's form and read
back; anything else is a ValueError (a 400 naming the field), never an OverflowError."""

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.timestamps import normalize_iso, parse_iso, to_iso

UTC = timezone.utc


@pytest.mark.parametrize("moment, text", [
    (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00.000Z"),
    (datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "0999-12-31T23:59:59.999Z"),
    (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "9999-12-31T23:59:59.999Z"),
])
def test_years_have_four_digits(moment, text):
    assert to_iso(moment) == text and to_iso(parse_iso(text)) == text


@given(st.datetimes(timezones=st.just(UTC)))
def test_every_instant_reads_back_to_the_millisecond(moment):
    assert parse_iso(to_iso(moment)) == moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@pytest.mark.parametrize("text", [
    "0001-01-01T00:00:00+01:00",     # year 0 in UTC
    "9999-12-31T23:59:59-01:00",     # year 10000 in UTC
    "2026-11-22T19:30:00",           # no offset
    "2026-11-22T19:30:00Z\n",        # a final newline
    "2026-W48-1T00:00:00Z",          # ISO 8601 forms Python accepts and RFC 3339 does not
    "20261122T193000Z",
    "2026-11-22T19:30Z",
    "2026-11-22T19:30:00,5Z",
    "2026-11-22T19:30:00+01:00:30",
    "\u0662026-11-22T19:30:00Z",     # a non-ASCII digit
    "2026-13-01T00:00:00Z",
])
def test_what_is_not_a_date_time(text):
    with pytest.raises(ValueError):
        parse_iso(text)


def test_offsets_and_lowercase_are_normalized():
    assert normalize_iso("2026-11-22t20:30:00.5+01:00") == "2026-11-22T19:30:00.500Z"
    assert normalize_iso("0001-01-01T01:00:00+01:00") == "0001-01-01T00:00:00.000Z"
    assert normalize_iso("2026-11-22T19:30:00z") == "2026-11-22T19:30:00.000Z"


def test_finer_digits_than_milliseconds_are_dropped_as_taskclusters_dates_drop_them():
    assert parse_iso("2026-11-22T19:30:00.485966Z") == parse_iso("2026-11-22T19:30:00.485Z")
    assert parse_iso("2026-11-22T19:30:00.4859+00:00").microsecond == 485000
