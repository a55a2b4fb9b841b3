"""Read, change, write back conditionally, and read again when someone else wrote first.

Every stored record that several processes change (a graph's state, a group, a label) is
changed this way: the write succeeds only if the row is still as it was read (its ETag),
so no change is ever lost to a concurrent one.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from shared.domain.errors import QueueError
from shared.storage.errors import ChangedSinceRead

Record = TypeVar("Record")
MAX_ATTEMPTS = 20


def change_until_saved(load: Callable[[], Record | None], change: Callable[[Record], Record],
                       save: Callable[[Record], Record], first: Record | None = None,
                       touch: bool = False) -> Record | None:
    """Apply `change` to what `load` reads and `save` it; the record as it ends up (None if
    there is none). A change that returns the record unchanged writes nothing, unless
    `touch`: then it is written still, so that whoever read it before this writer learnt
    something (and may decide on what they read then) must read it again. `first`: the
    record as the caller already read it, tried before reading again (a round trip saved)."""
    for attempt in range(MAX_ATTEMPTS):
        record = first if attempt == 0 and first is not None else load()
        if record is None:
            return None
        updated = change(record)
        if updated == record and not touch:
            return record
        try:
            return save(updated)
        except ChangedSinceRead:
            continue
    raise QueueError("A record is changing too quickly to be updated; try again")
