"""Taskcluster's cron patterns (a hook's `schedule`), read as Taskcluster's hooks service reads
them (with the npm package cron-parser 5.6, in UTC), and the next moment one matches.

A pattern has six fields, `second minute hour day-of-month month day-of-week`; with five, the
second is 0 (`0 9 * * 1-5`: 09:00:00 on weekdays). Fewer are padded on the left as that
parser pads them (`*`, then `0`). Each field is a comma-separated list of values, ranges
`a-b` and steps `a-b/n`, `a/n` (from a to the field's maximum) or `*/n`; `*` and `?` mean any
value. Seconds and minutes are 0-59, hours 0-23, days of month 1-31, months 1-12 or JAN-DEC,
days of week 0-7 (0 and 7 are Sunday) or SUN-SAT. Day of month also takes `L` (the month's
last day); day of week takes `<d>L` (the month's last such weekday) and `<d>#<n>` (its n-th,
1-5). When both day fields are restricted a day matching either fires (classic cron).
`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@hourly`, `@minutely`,
`@secondly`, `@weekdays` and `@weekends` stand for their patterns.

One difference, deliberate: `H` (a value the parser picks at random at each reading) is
refused, since the next fire time would change every time it is computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

PREDEFINED = {"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
              "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@hourly": "0 0 * * * *",
              "@minutely": "0 * * * * *", "@secondly": "* * * * * *", "@weekdays": "0 0 0 * * 1-5",
              "@weekends": "0 0 0 * * 0,6"}
_PADDING = ["*", "*", "*", "*", "*", "0"]
_ALIASES = {name: number for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_ALIASES.update({name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))})
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# A pattern that never matches (31 February with a restricted month) is found within this many days.
SEARCH_DAYS = 28 * 366


class CronError(ValueError):
    """The pattern is not one Taskcluster accepts; the message says why."""


@dataclass(frozen=True)
class _Spec:
    name: str
    low: int
    high: int
    chars: str          # the special characters beyond ?,*/- and digits


_SPECS = (_Spec("second", 0, 59, ""), _Spec("minute", 0, 59, ""), _Spec("hour", 0, 23, ""),
          _Spec("day of month", 1, 31, "L"), _Spec("month", 1, 12, ""), _Spec("day of week", 0, 7, "L"))


@dataclass(frozen=True)
class _Field:
    numbers: frozenset
    lasts: tuple          # values with `L`: 'L' (day of month), '5L' (day of week)
    wildcard: bool
    has_last: bool


class CronPattern:
    """One pattern, parsed; `next_after` is the first whole second after an instant it matches."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        raw = _fields(PREDEFINED.get(pattern, pattern))
        weekday, self._nth = _nth_day(raw[5])
        fields = [_field(spec, value, raw_value) for spec, value, raw_value
                  in zip(_SPECS, raw[:5] + [weekday], raw)]
        self._second, self._minute, self._hour, self._day, self._month, self._weekday = fields
        self._check_explicit_day()

    def next_after(self, instant: datetime) -> datetime:
        """The first whole second strictly after `instant` (UTC) that the pattern matches."""
        start = instant.astimezone(timezone.utc).replace(microsecond=0) + timedelta(seconds=1)
        day = start.date()
        for _ in range(SEARCH_DAYS):
            if day.month in self._month.numbers and self._day_matches(day):
                moment = self._first_time(start.time() if day == start.date() else time(0))
                if moment is not None:
                    return datetime.combine(day, moment, tzinfo=timezone.utc)
            day += timedelta(days=1)
        raise CronError("it matches no time")

    def _first_time(self, earliest: time) -> time | None:
        for hour in sorted(h for h in self._hour.numbers if h >= earliest.hour):
            low_minute = earliest.minute if hour == earliest.hour else 0
            for minute in sorted(m for m in self._minute.numbers if m >= low_minute):
                low_second = earliest.second if (hour, minute) == (earliest.hour, earliest.minute) else 0
                seconds = [s for s in self._second.numbers if s >= low_second]
                if seconds:
                    return time(hour, minute, min(seconds))
        return None

    def _day_matches(self, day: date) -> bool:
        last = _last_day(day)
        by_month_day = day.day in self._day.numbers or (self._day.has_last and day.day == last)
        weekday = (day.weekday() + 1) % 7            # Sunday 0, as in JavaScript
        nth_ok = self._nth == 0 or -(-day.day // 7) == self._nth
        by_weekday = (weekday in self._weekday.numbers and nth_ok) or (
            self._weekday.has_last and _last_weekday(self._weekday, weekday, day.day + 7 > last))
        if not self._day.wildcard and not self._weekday.wildcard:
            return by_month_day or by_weekday
        return (by_month_day and self._weekday.wildcard) or (self._day.wildcard and by_weekday)

    def _check_explicit_day(self) -> None:
        """A single month and an explicit day it never has (and no weekday to rescue it)."""
        if len(self._month.numbers) == 1 and not self._day.has_last and self._weekday.wildcard and self._day.numbers:
            [month] = self._month.numbers
            if min(self._day.numbers) > _DAYS_IN_MONTH[month - 1]:
                raise CronError("invalid explicit day of month definition")


def _fields(expression: str) -> list[str]:
    atoms = (expression or "0 * * * * *").strip().split()
    if len(atoms) > 6:
        raise CronError("too many fields (at most 6: second minute hour day-of-month month day-of-week)")
    return _PADDING[len(atoms):] + atoms if atoms else _PADDING[1:] + [""]


def _nth_day(value: str) -> tuple[str, int]:
    parts = value.split("#")
    if len(parts) == 1:
        return value, 0
    if re.search(r"[,\-/]", value):
        raise CronError("day of week: '#' cannot be combined with ',', '-' or '/'")
    if len(parts) > 2 or not parts[1].isdigit() or not 1 <= int(parts[1]) <= 5:
        raise CronError("day of week: the occurrence after '#' must be 1 to 5")
    return parts[0], int(parts[1])


def _field(spec: _Spec, value: str, raw: str) -> _Field:
    if "H" in value:
        raise CronError(f"{spec.name}: H (a random value) is not supported")
    if spec.name in ("month", "day of week"):
        value = re.sub(r"[a-zA-Z]{3}", lambda match: _alias(spec, match.group(0)), value)
    if not re.fullmatch(rf"[?,*0-9{spec.chars}/-]+", value):
        raise CronError(f"{spec.name}: invalid characters in {value!r}")
    value = re.sub(r"[*?]", f"{spec.low}-{spec.high}", value)
    numbers, lasts = [], []
    for atom in value.split(","):
        if not atom:
            raise CronError(f"{spec.name}: an empty value in a list")
        _atom(spec, atom, numbers, lasts)
    for last in lasts:
        if not re.fullmatch(r"[0-9]{0,2}L", last):
            raise CronError(f"{spec.name}: invalid value {last!r}")
    repeated = [number for number in set(numbers) if numbers.count(number) > 1 and number != 0]
    if repeated:   # cron-parser 5.6 lets a repeated 0 pass (`0,7` in day of week is Sunday twice)
        raise CronError(f"{spec.name}: duplicate values found: {min(repeated)}")
    has_last = "L" in raw or bool(lasts)
    return _Field(frozenset(numbers), tuple(lasts), raw in ("*", "?"), has_last)


def _alias(spec: _Spec, text: str) -> str:
    if text.lower() not in _ALIASES:
        raise CronError(f"{spec.name}: cannot resolve alias {text!r}")
    return str(_ALIASES[text.lower()])


def _atom(spec: _Spec, atom: str, numbers: list, lasts: list) -> None:
    """One list element: a value, a range or a step, added to `numbers` (or `lasts`)."""
    parts = atom.split("/")
    if len(parts) > 2:
        raise CronError(f"{spec.name}: invalid repeat {atom!r}")
    step = 1
    if len(parts) == 2:
        parts[0] = parts[0] if "-" in parts[0] else f"{parts[0]}-{spec.high}"
        step = _integer(parts[1])
    if "-" not in parts[0]:
        if "L" in parts[0]:
            lasts.append(parts[0])
            return
        number = int(parts[0])
        if not spec.low <= number <= spec.high:
            raise CronError(f"{spec.name}: value {number} out of range {spec.low}-{spec.high}")
        numbers.append(number % 7 if spec.name == "day of week" else number)
        return
    low, high = (_integer(part) for part in parts[0].split("-")[:2])
    if low is None or high is None or low < spec.low or high > spec.high:
        raise CronError(f"{spec.name}: range {parts[0]} out of range {spec.low}-{spec.high}")
    if low > high:
        raise CronError(f"{spec.name}: invalid range {low}-{high}, the first is greater")
    if step is None or step <= 0:
        raise CronError(f"{spec.name}: cannot repeat every {parts[1]!r}")
    added = ([0] if spec.name == "day of week" and high % 7 == 0 else []) + list(range(low, high + 1, step))
    numbers.extend(dict.fromkeys(added))


def _integer(text: str) -> int | None:
    """JavaScript's parseInt as the parser uses it: leading digits, else nothing."""
    digits = re.match(r"[0-9]+", text)
    return int(digits.group(0)) if digits else None


def _last_day(day: date) -> int:
    if day.month == 2:
        leap = day.year % 4 == 0 and (day.year % 100 != 0 or day.year % 400 == 0)
        return 29 if leap else 28
    return _DAYS_IN_MONTH[day.month - 1]


def _last_weekday(field: _Field, weekday: int, in_last_week: bool) -> bool:
    """`<d>L`: the day is the month's last weekday d (every value of the field is read so)."""
    values = [str(number) for number in field.numbers] + list(field.lasts)
    for value in values:
        if not value[0].isdigit():
            raise CronError("day of week: L needs a weekday before it (5L: the last Friday)")
        if int(value[0]) % 7 == weekday and in_last_week:
            return True
    return False
