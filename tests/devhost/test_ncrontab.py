"""NCRONTAB schedules (`second minute hour day month day-of-week`), as timer triggers read them."""

from datetime import datetime, timezone

import pytest

from devhost.ncrontab import Schedule

TUESDAY = datetime(2026, 11, 24, 12, 0, 0)  # Tuesday 24 November 2026, 12:00:00


@pytest.mark.parametrize("expression, moment, expected", [
    # every second; a fraction of a second rounds down, and the result is strictly after
    ("* * * * * *", TUESDAY.replace(microsecond=500_000), TUESDAY.replace(second=1)),
    ("* * * * * *", TUESDAY, TUESDAY.replace(second=1)),
    # every 5 seconds, rolling over into the next minute
    ("*/5 * * * * *", TUESDAY.replace(second=3), TUESDAY.replace(second=5)),
    ("*/5 * * * * *", TUESDAY.replace(second=55), TUESDAY.replace(minute=1, second=0)),
    # a step from a start value: seconds 10, 30, 50
    ("10/20 * * * * *", TUESDAY.replace(second=31), TUESDAY.replace(second=50)),
    # a specific minute and hour: already past today, so tomorrow
    ("0 30 9 * * *", TUESDAY, datetime(2026, 11, 25, 9, 30)),
    # five fields mean second 0
    ("15 * * * *", TUESDAY.replace(minute=20), datetime(2026, 11, 24, 13, 15)),
    # day of week by number and by name: next Monday
    ("0 0 9 * * 1", TUESDAY, datetime(2026, 11, 30, 9, 0)),
    ("0 0 9 * * Mon", TUESDAY, datetime(2026, 11, 30, 9, 0)),
    # ranges and lists: weekdays at 8, 9, 10 and 17 o'clock
    ("0 0 8-10,17 * * 1-5", TUESDAY, datetime(2026, 11, 24, 17, 0)),
    ("0 0 8-10,17 * * mon-fri", datetime(2026, 11, 27, 18, 0), datetime(2026, 11, 30, 8, 0)),
    # day and month: across the year end
    ("0 0 0 1 jan *", TUESDAY, datetime(2027, 1, 1)),
    # day of month AND day of week (NCRONTAB requires both): Feb 29 that is a Monday
    ("0 0 12 29 2 1", TUESDAY, datetime(2044, 2, 29, 12, 0)),
])
def test_next_after(expression, moment, expected):
    assert Schedule(expression).next_after(moment) == expected


def test_time_zone_is_kept():
    moment = TUESDAY.replace(tzinfo=timezone.utc)
    assert Schedule("*/2 * * * * *").next_after(moment) == moment.replace(second=2)


def test_consecutive_occurrences_of_an_every_10_seconds_schedule():
    schedule, moment, seen = Schedule("*/10 * * * * *"), TUESDAY, []
    for _ in range(7):
        moment = schedule.next_after(moment)
        seen.append((moment.minute, moment.second))
    assert seen == [(0, 10), (0, 20), (0, 30), (0, 40), (0, 50), (1, 0), (1, 10)]


@pytest.mark.parametrize("expression", [
    "* * * *",               # too few fields
    "* * * * * * *",         # too many
    "60 * * * * *",          # second out of range
    "* * 24 * * *",          # hour out of range
    "* * * 0 * *",           # day of month starts at 1
    "5-1 * * * * *",         # reversed range
    "*/0 * * * * *",         # zero step
    "x * * * * *",           # not a number or a name
    "0 0 0 31 2 *",          # valid fields, but February 31st never comes
])
def test_bad_schedules_are_rejected(expression):
    with pytest.raises(ValueError):
        Schedule(expression)
