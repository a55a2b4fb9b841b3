"""A run's results document: what the run was and what it left behind, as JSON in Blob
Storage, served as the run's artifact `public/results.json` (seed 004's `result`), so
consumers of the resolution events and the browser fetch it like any artifact.

It is written the first time it is read, once the run is over for good (it resolved, and
so did the task, with it or with the runs the queue retried it with: see `run_settled`),
not when the task resolves: most runs' documents are never read, and writing each would
cost every resolution two round trips (the run's artifacts query and the blob's PUT). A
reader finds it as soon as the resolution is written, with no follow-up to wait for. The
document holds the run's resolution, times and worker, and each artifact present when it
was written, with its content type, size and hashes (and a URL through the queue); the log,
by convention `public/logs/live.log`, is named apart. Once written it stays as it was.

It is one blob at the run's artifact name, `t/<taskId>/<runId>/public/results.json`, and
nothing else: no row, no expiry index item. Its artifact is made up when it is read (see
`artifacts`) and it goes when its task expires (see `sweeps/task_expiry`). Two first readers at
once both write it, each from stored state; a PUT over the same blob replaces it.
"""

from __future__ import annotations

import json
from typing import Callable
from urllib.parse import quote

from shared.domain.artifacts import RESULTS_CONTENT_TYPE, RESULTS_NAME, Artifact, object_name
from shared.domain.runs import Run
from shared.storage.patterns.keys import blob_name
from shared.storage.tables.task_table import TaskRecord

LOG_NAME = "public/logs/live.log"
VERSION = 1


def artifact_url(root_url: str, task_id: str, run_id: int, name: str) -> str:
    """getArtifact's URL, the name as one segment (as Taskcluster's clients send it)."""
    return f"{root_url.rstrip('/')}/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts/{quote(name, safe='')}"


class RunResults:
    def __init__(self, of_run: Callable[[str, int], list[Artifact]], blobs, root_url: str) -> None:
        self.of_run = of_run      # a run's present artifacts (`Artifacts.of_run`)
        self.blobs = blobs
        self.root_url = root_url

    def write(self, task: TaskRecord, run: Run) -> int:
        """Write the run's document; its size in bytes."""
        artifacts = [artifact for artifact in self.of_run(task.task_id, run.run_id)
                     if artifact.name != RESULTS_NAME]     # a row of that name, from before it had none
        data = json.dumps(self.document(task, run, artifacts), indent=1).encode()
        self.blobs.put(results_blob(task.task_id, run.run_id), data, RESULTS_CONTENT_TYPE)
        return len(data)

    def document(self, task: TaskRecord, run: Run, artifacts: list[Artifact]) -> dict:
        summary = task.summary
        listed = [self._listed(task.task_id, run.run_id, artifact) for artifact in artifacts]
        logs = next((entry["url"] for entry in listed if entry["name"] == LOG_NAME), None)
        return {
            "version": VERSION,
            "taskId": task.task_id,
            "taskGroupId": summary["taskGroupId"],
            "taskQueueId": summary["taskQueueId"],
            "schedulerId": summary["schedulerId"],
            "projectId": summary["projectId"],
            **run.to_json(),
            "logs": logs,
            "artifacts": listed,
        }

    def _listed(self, task_id: str, run_id: int, artifact: Artifact) -> dict:
        entry = {**artifact.to_json(), "url": artifact_url(self.root_url, task_id, run_id, artifact.name)}
        if artifact.size is not None:
            entry["contentLength"] = artifact.size     # what was stored, beyond what the worker said
        if artifact.hashes:
            entry["hashes"] = artifact.hashes
        return entry


def results_blob(task_id: str, run_id: int) -> str:
    """The blob of a run's results document, named as an artifact's (`public/results.json`)."""
    return blob_name(object_name(task_id, run_id, RESULTS_NAME))
