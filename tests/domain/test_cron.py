"""Taskcluster's cron patterns. The expected times are what Taskcluster's parser (cron-parser
5.6.2, the version its hooks service pins, in UTC) answers for the same patterns and instants;
they were compared side by side for 48 patterns at three instants, and agree except where a
difference is deliberate (the last two tests)."""

from datetime import datetime, timezone

import pytest

from shared.domain.cron import CronError, CronPattern

NOW = datetime(2026, 11, 27, 14, 59, 59, 500000, tzinfo=timezone.utc)


def fires(pattern: str, after: datetime = NOW, count: int = 5) -> list[str]:
    parsed, times = CronPattern(pattern), []
    for _ in range(count):
        after = parsed.next_after(after)
        times.append(after.strftime("%Y-%m-%dT%H:%M:%S"))
    return times


@pytest.mark.parametrize("pattern, expected", [
    ("0 * * * *", ["2026-11-27T15:00:00", "2026-11-27T16:00:00"]),          # five fields: second 0
    ("*/15 * * * * *", ["2026-11-27T15:00:00", "2026-11-27T15:00:15"]),     # six: seconds first
    ("5/20 * * * * *", ["2026-11-27T15:00:05", "2026-11-27T15:00:25"]),
    ("0 30 9 * * MON-FRI", ["2026-11-30T09:30:00", "2026-12-01T09:30:00"]),
    ("@weekly", ["2026-11-29T00:00:00", "2026-12-06T00:00:00"]),
    ("0 0 0 * * 5L", ["2026-12-25T00:00:00", "2027-01-29T00:00:00"]),       # the last Friday
    ("0 0 0 * * 1#2", ["2026-12-14T00:00:00", "2027-01-11T00:00:00"]),      # the second Monday
    ("0 0 12 1,15 * 3", ["2026-12-01T12:00:00", "2026-12-02T12:00:00"]),    # both days restricted: either
    ("0 0 0 29 2 *", ["2028-02-29T00:00:00", "2032-02-29T00:00:00"]),
    ("0 0 0 * * 1,5L", ["2026-11-30T00:00:00", "2026-12-07T00:00:00"]),
    ("0 0 12 * * 0,7", ["2026-11-29T12:00:00", "2026-12-06T12:00:00"]),     # Sunday twice is Sunday
    ("1 2 3 4", ["2027-03-02T01:00:00", "2027-03-02T01:00:01"]),            # padded as the parser pads
    ("", ["2026-11-27T15:00:00", "2026-11-27T15:01:00"]),                   # the parser's default
])
def test_next_fires_are_taskclusters(pattern, expected):
    assert fires(pattern, count=len(expected)) == expected


def test_the_last_day_of_february_in_a_leap_year():
    after = datetime(2024, 2, 28, 23, 59, 59, tzinfo=timezone.utc)
    assert fires("0 0 0 L * *", after, 3) == ["2024-02-29T00:00:00", "2024-03-31T00:00:00", "2024-04-30T00:00:00"]


def test_the_next_fire_is_strictly_after_the_instant_at_whole_seconds():
    exact = datetime(2026, 1, 1, 10, 0, 0, tzinfo=timezone.utc)
    assert CronPattern("0 0 10 * * *").next_after(exact) == datetime(2026, 1, 2, 10, tzinfo=timezone.utc)
    assert CronPattern("* * * * * *").next_after(exact.replace(microsecond=999000)) == \
        datetime(2026, 1, 1, 10, 0, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("pattern, why", [
    ("0 0 * * * * *", "too many fields"), ("0 60 * * * *", "out of range"), ("0 0 24 * * *", "out of range"),
    ("0 */0 * * * *", "cannot repeat"), ("0 5-1 * * * *", "first is greater"), ("0 1,1 * * * *", "duplicate"),
    ("0 0 0 * foo *", "cannot resolve alias"), ("0 0 0 * * 1#6", "1 to 5"), ("0 0 0 * * 1#2,3", "cannot be combined"),
    ("0 0 0 1-L * *", "out of range"), ("0 0 0 30 2 *", "explicit day of month"), ("0 0 0 1 1 L", "weekday"),
    ("0 0 0 5L * 1#1#2", "1 to 5"), ("x * * * * *", "invalid characters"), ("0 0 0 1,,2 * *", "empty value"),
])
def test_patterns_taskcluster_refuses_are_refused_saying_why(pattern, why):
    with pytest.raises(CronError, match=why):
        CronPattern(pattern).next_after(NOW)


def test_a_repeated_zero_passes_as_in_taskclusters_parser():
    assert fires("0,0 * * * * *", count=2) == ["2026-11-27T15:00:00", "2026-11-27T15:01:00"]


def test_deliberately_refused_a_random_value():
    with pytest.raises(CronError, match="H .*not supported"):
        CronPattern("H * * * *")


def test_deliberately_refused_a_pattern_that_never_matches():
    # cron-parser gives up after its loop limit and returns days that do not match (a 13 April).
    with pytest.raises(CronError, match="matches no time"):
        CronPattern("0 0 0 31 2,4 *").next_after(NOW)
