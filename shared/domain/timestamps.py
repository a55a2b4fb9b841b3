"""Timestamps as Taskcluster writes them: UTC, millisecond precision, `Z` suffix."""

from datetime import datetime, timedelta, timezone


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def to_iso(moment: datetime) -> str:
    """`2026-11-22T19:30:00.123Z`: the form every Taskcluster response uses."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    """Parse an RFC 3339 date-time; naive values are taken as UTC. Raises ValueError."""
    moment = datetime.fromisoformat(text.replace("z", "Z"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def normalize_iso(text: str) -> str:
    return to_iso(parse_iso(text))


__all__ = ["utcnow", "to_iso", "parse_iso", "normalize_iso", "timedelta", "timezone"]
