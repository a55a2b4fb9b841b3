"""Expiry of artifacts and of the objects that hold their bytes: at an artifact's `expires`
its row goes (with its blob, for `s3`), at an object's its blob and row.

What comes due is what `artifacts/expiry_index` noted. Deletions go blob first and row last,
so a sweep killed midway is finished by the next; like the other sweeps, one pass handles at
most `max_items` items, in batches of 100.
"""

from __future__ import annotations

from datetime import datetime

from shared.services.artifacts.artifacts import Artifacts
from shared.services.artifacts.expiry_index import noted_artifact, noted_object
from shared.services.artifacts.objects import Objects
from shared.services.sweeps.sweep import Sweep
from shared.storage.patterns.time_index import DueItem, TimeIndex


class ArtifactExpiry(Sweep):
    action = "expired"

    def __init__(self, index: TimeIndex, artifacts: Artifacts, objects: Objects) -> None:
        super().__init__(index)
        self.artifacts = artifacts
        self.objects = objects

    def _handle(self, item: DueItem, now: datetime) -> int:
        if (name := noted_object(item)) is not None:
            return int(self.objects.expire(name, now))
        if (artifact := noted_artifact(item)) is not None:
            return int(self.artifacts.expire(*artifact, now))
        return 0
