"""A run's results document: what the run was and what it left behind, as JSON in Blob
Storage, served as the run's artifact `public/results.json` (seed 004's `result`), so
consumers of the resolution events and the browser fetch it like any artifact.

It is written when the task resolves, as one step of the resolution's follow-up (so it is
repeated until done, like every step there), for the run that resolved the task and any
run the queue retried just before it (earlier runs resolved the task before a rerun, and
got theirs then). The document holds the run's resolution, times and worker, and each
artifact present then with its content type, size and hashes (and a URL through the queue);
the log, by convention `public/logs/live.log`, is named apart.

It is one blob at the run's artifact name, `t/<taskId>/<runId>/public/results.json`, and
nothing else: no row, no expiry index item. Its artifact is made up when it is read (see
`artifacts`) and it goes when its task expires (see `expiration`). Writing costs the run's
artifacts query and the blob's PUT; the task comes with the resolution when the process
that resolved it follows it up (read otherwise). Writing it again changes nothing: the
document is made from stored state only, and a PUT over the same blob replaces it.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ..domain.artifacts import RESULTS_CONTENT_TYPE, RESULTS_NAME, Artifact
from ..domain.dependencies import resolution_of
from ..domain.runs import Run
from ..storage.task_table import TaskRecord, TaskTable
from .artifacts import Artifacts, results_blob
from .resolution_events import Resolution

LOG_NAME = "public/logs/live.log"
VERSION = 1


def artifact_url(root_url: str, task_id: str, run_id: int, name: str) -> str:
    """getArtifact's URL, the name as one segment (as Taskcluster's clients send it)."""
    return f"{root_url.rstrip('/')}/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts/{quote(name, safe='')}"


class RunResults:
    def __init__(self, tasks: TaskTable, artifacts: Artifacts, blobs, root_url: str) -> None:
        self.tasks = tasks
        self.artifacts = artifacts
        self.blobs = blobs
        self.root_url = root_url

    def record(self, resolution: Resolution) -> int:
        """Write the documents of the runs of this resolution; how many."""
        task = resolution.task or self.tasks.load(resolution.task_id)
        if task is None:
            return 0
        first = resolution.run_id
        while first > 0 and resolution_of(task.status, first - 1) is None:   # retried: this resolution's too
            first -= 1
        runs = task.status.runs[first:resolution.run_id + 1]
        for run in runs:
            self._record(task, run)
        return len(runs)

    def _record(self, task: TaskRecord, run: Run) -> None:
        artifacts = [artifact for artifact in self.artifacts.of_run(task.task_id, run.run_id)
                     if artifact.name != RESULTS_NAME]     # a row of that name, from before it had none
        data = json.dumps(self.document(task, run, artifacts), indent=1).encode()
        self.blobs.put(results_blob(task.task_id, run.run_id), data, RESULTS_CONTENT_TYPE)

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
