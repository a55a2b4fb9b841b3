"""A live progress bar of a group's tasks: resolved out of all, with counts by state.

Drawn on stderr while stderr is a terminal; without one (a pipe, a CI log) a line is
written each time the counts change instead, so a log still shows the progress.
"""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from taskq.output import PEOPLE
from taskq.states import COLORS, ORDER, RESOLVED


def describe(counts: dict[str, int], markup: bool = True) -> str:
    parts = []
    for state in ORDER:
        if counts.get(state):
            text = f"{state} {counts[state]}"
            parts.append(f"[{COLORS[state]}]{text}[/]" if markup else text)
    return "  ".join(parts) or "no tasks yet"


class GroupProgress:
    def __init__(self, title: str) -> None:
        self._live = PEOPLE.is_terminal
        self._last = None
        self._title = title
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=PEOPLE, transient=False)
        self._task = self._bar.add_task(title, total=None)

    def __enter__(self) -> GroupProgress:
        if self._live:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live:
            self._bar.stop()

    def show(self, counts: dict[str, int], note: str = "") -> None:
        total = sum(counts.values())
        resolved = sum(counts[state] for state in RESOLVED if state in counts)
        if self._live:
            self._bar.update(self._task, total=total or None, completed=resolved,
                             description=f"{self._title} {describe(counts)} {note}".rstrip())
        elif (counts, note) != self._last:
            PEOPLE.print(f"{self._title} {resolved}/{total} {describe(counts, markup=False)} {note}".rstrip(),
                         markup=False)
        self._last = (dict(counts), note)
