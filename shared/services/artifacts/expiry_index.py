"""Where artifacts and objects note their expiry: the `artifact-expires` time index (day
buckets), written before an artifact's or object's row is first written and again when an
artifact's expiry is extended, so nothing outlives its expiry unindexed. The sweep that reads
it is `sweeps/artifact_expiry`; an item is only a hint, the row says whether it expired.
"""

from __future__ import annotations

import json

from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.time_index import DueItem, TimeIndex

INDEX = "artifact-expires"
OBJECT, ARTIFACT = "object.", "artifact."
_KEY_TEXT = 200


def watch_object(index: TimeIndex, name: str, expires: str) -> None:
    index.put(expires, OBJECT + bounded_key(name, _KEY_TEXT), json.dumps({"name": name}))


def watch_artifact(index: TimeIndex, task_id: str, run_id: int, name: str, expires: str) -> None:
    index.put(expires, ARTIFACT + bounded_key(f"{task_id}.{run_id}.{name}", _KEY_TEXT),
              json.dumps({"taskId": task_id, "runId": run_id, "name": name}))


def noted_object(item: DueItem) -> str | None:
    """The name of the object a due item watches, if it watches one."""
    noted = json.loads(item.value) if item.value else {}
    return noted["name"] if item.key.startswith(OBJECT) and noted else None


def noted_artifact(item: DueItem) -> tuple[str, int, str] | None:
    """The (taskId, runId, name) of the artifact a due item watches, if it watches one."""
    noted = json.loads(item.value) if item.value else {}
    return (noted["taskId"], noted["runId"], noted["name"]) if item.key.startswith(ARTIFACT) and noted else None
