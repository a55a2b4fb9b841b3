"""NCRONTAB schedules, as Azure Functions timer triggers take them:
`{second} {minute} {hour} {day} {month} {day-of-week}` (a 5-field cron means second 0)."""

from __future__ import annotations

from datetime import datetime, timedelta

_NAMES = {
    "sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_RANGES = [(0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]
# The Gregorian calendar (leap days and weekdays) repeats every 400 years: a schedule with no
# occurrence within that span never fires (e.g. February 31st).
_HORIZON = timedelta(days=146097)


def _value(text: str) -> int:
    return _NAMES[text.lower()] if text.lower() in _NAMES else int(text)


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step = part.partition("/")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            start, end = (_value(x) for x in body.split("-", 1))
        else:
            start = end = _value(body)
            if step:
                end = high
        if not (low <= start <= end <= high):
            raise ValueError(f"{part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, int(step) if step else 1))
    return frozenset(values)


class Schedule:
    def __init__(self, expression: str) -> None:
        fields = expression.split()
        if len(fields) == 5:
            fields = ["0", *fields]
        if len(fields) != 6:
            raise ValueError(f"NCRONTAB needs 6 fields (or 5): {expression!r}")
        self.expression = expression
        self.second, self.minute, self.hour, self.day, self.month, self.weekday = (
            _field(text, low, high) for text, (low, high) in zip(fields, _RANGES))
        self.next_after(datetime(2000, 1, 1))  # reject a schedule that never fires now, not in a timer thread

    def _day_matches(self, moment: datetime) -> bool:
        weekday = (moment.weekday() + 1) % 7  # Python: Monday=0; cron: Sunday=0
        return moment.month in self.month and moment.day in self.day and weekday in self.weekday

    def matches(self, moment: datetime) -> bool:
        return (self._day_matches(moment) and moment.hour in self.hour and moment.minute in self.minute
                and moment.second in self.second)

    def next_after(self, moment: datetime) -> datetime:
        """The first matching second strictly after `moment`."""
        candidate = moment.replace(microsecond=0) + timedelta(seconds=1)
        give_up = candidate + _HORIZON
        while candidate < give_up:
            # Skip whole days (including wrong weekdays), hours and minutes before stepping seconds.
            if not self._day_matches(candidate):
                candidate = (candidate + timedelta(days=1)).replace(hour=0, minute=0, second=0)
            elif candidate.hour not in self.hour:
                candidate = (candidate + timedelta(hours=1)).replace(minute=0, second=0)
            elif candidate.minute not in self.minute:
                candidate = (candidate + timedelta(minutes=1)).replace(second=0)
            elif candidate.second in self.second:
                return candidate
            else:
                candidate += timedelta(seconds=1)
        raise ValueError(f"{self.expression!r} never fires")
