"""Timestamps as Taskcluster writes them: UTC, millisecond precision, `Z` suffix.

Every date-time the API accepts goes through `parse_iso`, so it is the one place that says
what a date-time is: RFC 3339 (what JSON Schema's `date-time` means), with an offset, whose
UTC instant Python can represent (years 1 to 9999). Anything else is a ValueError, which
the callers turn into a 400 naming the field, never an OverflowError.
"""

import re
from datetime import datetime, timedelta, timezone

# Python's fromisoformat also takes week dates, basic format, commas and bare hours: none
# of them is RFC 3339, and each would be one more form to store and compare.
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                      r"([Zz]|[+-][0-9]{2}:[0-9]{2})")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def to_iso(moment: datetime) -> str:
    """`2026-11-22T19:30:00.123Z`: the form every Taskcluster response uses. The year always
    has four digits (strftime's `%Y` writes year 1 as `1` on Linux, which no parser reads)."""
    if moment.tzinfo is not timezone.utc:
        moment = moment.astimezone(timezone.utc)
    # Field by field: half the cost of strftime, the host's most sampled line (2% of its
    # samples) while it served sequential lifecycles.
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
            f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


def parse_iso(text: str) -> datetime:
    """Parse an RFC 3339 date-time with an offset into UTC, to the millisecond (finer digits
    dropped, as Taskcluster's JavaScript dates drop them: an artifact sent to expire at
    `12:00:00.485966` does not outlive its task stored as `12:00:00.485`). Raises ValueError."""
    if not _RFC3339.fullmatch(text):
        raise ValueError("not an RFC 3339 date-time such as 2026-11-22T19:30:00.000Z")
    moment = datetime.fromisoformat(text.upper())
    try:
        moment = moment.astimezone(timezone.utc)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise ValueError("outside the years 1 to 9999 in UTC") from None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def normalize_iso(text: str) -> str:
    return to_iso(parse_iso(text))


__all__ = ["utcnow", "to_iso", "parse_iso", "normalize_iso", "timedelta", "timezone"]
