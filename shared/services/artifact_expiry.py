"""Expiry of the objects that hold artifacts' bytes: at an object's `expires` its blob and
row are deleted.

Each is indexed in the `artifact-expires` time index (day buckets) before its row is first
written, so nothing outlives its expiry unindexed. An item is a hint: the sweep reads the
row, which says whether it expired. Deletions go blob first and row last, so a sweep killed midway is finished by the next;
like the other sweeps, one pass handles at most `max_items` items, in batches of 100.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from ..storage.keys import bounded_key
from ..storage.time_index import DueItem, TimeIndex
from .time_resolvers import TimeResolver

if TYPE_CHECKING:   # the services this sweep calls index their rows through this module
    from .objects import Objects

INDEX = "artifact-expires"
OBJECT = "object."
_KEY_TEXT = 200


def watch_object(index: TimeIndex, name: str, expires: str) -> None:
    index.put(expires, OBJECT + bounded_key(name, _KEY_TEXT), json.dumps({"name": name}))


class ArtifactExpiry(TimeResolver):
    action = "expired"

    def __init__(self, index: TimeIndex, objects: Objects) -> None:
        super().__init__(index)
        self.objects = objects

    def _handle(self, item: DueItem, now: datetime) -> int:
        noted = json.loads(item.value) if item.value else {}
        if item.key.startswith(OBJECT) and noted:
            return int(self.objects.expire(noted["name"], now))
        return 0
