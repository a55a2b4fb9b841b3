"""Expiry of artifacts and of the objects that hold their bytes: at an artifact's `expires`
its row goes (with its blob, for `s3`), at an object's its blob and row.

Each is indexed in the `artifact-expires` time index (day buckets) before its row is first
written, and again when an artifact's expiry is extended, so nothing outlives its expiry
unindexed. An item is a hint: the sweep reads the row, which says whether it expired.
Deletions go blob first and row last, so a sweep killed midway is finished by the next;
like the other sweeps, one pass handles at most `max_items` items, in batches of 100.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.services.sweeps.sweep import Sweep

if TYPE_CHECKING:   # the services this sweep calls index their rows through this module
    from shared.services.artifacts.artifacts import Artifacts
    from shared.services.artifacts.objects import Objects

INDEX = "artifact-expires"
OBJECT, ARTIFACT = "object.", "artifact."
_KEY_TEXT = 200


def watch_object(index: TimeIndex, name: str, expires: str) -> None:
    index.put(expires, OBJECT + bounded_key(name, _KEY_TEXT), json.dumps({"name": name}))


def watch_artifact(index: TimeIndex, task_id: str, run_id: int, name: str, expires: str) -> None:
    index.put(expires, ARTIFACT + bounded_key(f"{task_id}.{run_id}.{name}", _KEY_TEXT),
              json.dumps({"taskId": task_id, "runId": run_id, "name": name}))


class ArtifactExpiry(Sweep):
    action = "expired"

    def __init__(self, index: TimeIndex, artifacts: Artifacts, objects: Objects) -> None:
        super().__init__(index)
        self.artifacts = artifacts
        self.objects = objects

    def _handle(self, item: DueItem, now: datetime) -> int:
        noted = json.loads(item.value) if item.value else {}
        if item.key.startswith(OBJECT) and noted:
            return int(self.objects.expire(noted["name"], now))
        if item.key.startswith(ARTIFACT) and noted:
            return int(self.artifacts.expire(noted["taskId"], noted["runId"], noted["name"], now))
        return 0
