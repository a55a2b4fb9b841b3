"""One read for many askers: threads of a process asking storage the same question at the
same time share one round trip.

Many completions at once ask the same thing: is any member of the group unresolved, is any
label of the graph open, is any requirement of the fan-in task left. Each needs an answer
read after it asked (after its own write: the member, label or requirement it removed), not
a read of its own. So an asker joins the next read of its key, which starts when the read in
flight for that key (if any) has ended: at most one read per key runs and one waits, however
many ask, and each answer comes from a read that started after its asker asked, as its own
read would have. Azurite evaluates every query against every row of the table, so on a graph
of 10,000 tasks these repeated checks were most of what storage did for a completion.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

from shared.storage.patterns.rounds import Round, Rounds

T = TypeVar("T")


class _Read(Round):
    def __init__(self) -> None:
        super().__init__()
        self.value = None
        self.error: BaseException | None = None


class SharedReads:
    def __init__(self) -> None:
        self._rounds = Rounds()

    def read(self, key: Hashable, fetch: Callable[[], T]) -> T:
        """`fetch()`'s value, from a call of it that started after this one. The value may be
        shared with other askers of the same key: read it, do not change it."""
        read, leads = self._rounds.join(key, _Read, lambda read: True)
        if leads:
            self._rounds.lead(key, read, lambda: _fetch(read, fetch))
        else:
            read.done.wait()
        if read.error is not None:
            raise read.error
        return read.value


def _fetch(read: _Read, fetch: Callable[[], T]) -> None:
    try:
        read.value = fetch()
    except BaseException as error:
        read.error = error
