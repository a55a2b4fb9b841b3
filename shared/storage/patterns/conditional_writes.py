"""Read, change, write back conditionally, and read again when someone else wrote first: the
one loop behind every change that several processes make to the same row.

A write succeeds only if the row is still as it was read (its ETag, or its absence for an
insert), so no change is ever lost to a concurrent one. A writer that lost reads again and
decides again on what it reads; after `MAX_ATTEMPTS` losses in a row it gives up, since a row
that changes that often is better left to the caller's retry than spun on.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from shared.domain.errors import QueueError
from shared.storage.errors import ChangedSinceRead

Record = TypeVar("Record")
Result = TypeVar("Result")
MAX_ATTEMPTS = 20


def until_written(read: Callable[[], Record | None], write: Callable[[Record | None], Result],
                  first: Record | None = None, gave_up: Callable[[], Result] | None = None) -> Result:
    """What `write(record)` answers for the record `read()` gives (None: there is none), or
    for `first`, the record as the caller knows it already (a round trip saved). `write`
    raises ChangedSinceRead when its condition failed, or when what it would decide on `first`
    may only be decided on a fresh read; the record is then read again, unless the refusal
    carries it (`fresh`). After MAX_ATTEMPTS refusals: `gave_up()`, or QueueError."""
    record = first
    for _ in range(MAX_ATTEMPTS):
        if record is None:
            record = read()
        try:
            return write(record)
        except ChangedSinceRead as refused:
            record = refused.fresh
    if gave_up is not None:
        return gave_up()
    raise QueueError("A record is changing too quickly to be updated; try again")


def change_until_saved(load: Callable[[], Record | None], change: Callable[[Record], Record],
                       save: Callable[[Record], Record], first: Record | None = None,
                       touch: bool = False) -> Record | None:
    """Apply `change` to what `load` reads and `save` it; the record as it ends up (None if
    there is none). A change that returns the record unchanged writes nothing, unless
    `touch`: then it is written still, so that whoever read it before this writer learnt
    something (and may decide on what they read then) must read it again. `first`: the
    record as the caller already read it, tried before reading again (a round trip saved)."""
    def write(record: Record | None) -> Record | None:
        if record is None:
            return None
        updated = change(record)
        if updated == record and not touch:
            return record
        return save(updated)
    return until_written(load, write, first)
