"""A run's results document: what the run was and what it left behind, as JSON in Blob
Storage, served as the run's artifact `public/results.json` (seed 004's `result`), so
consumers of the resolution events and the browser fetch it like any artifact.

It is written when the task resolves, as one step of the resolution's follow-up (so it is
repeated until done, like every step there), for each resolved run of the task that has
no document yet: the run that resolved it, and any run the queue retried before it. The
document holds the run's resolution, times and worker, and each artifact present then with
its content type, size and hashes (and a URL through the queue); the log, by convention
`public/logs/live.log`, is named apart. Writing it again changes nothing: the document is
made from stored state only, and a run that has one is skipped.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ..domain.artifacts import Artifact, object_name
from ..domain.runs import Run
from ..storage.task_table import TaskRecord, TaskTable
from .artifacts import Artifacts
from .objects import Objects
from .resolution_events import Resolution

RESULTS_NAME = "public/results.json"
LOG_NAME = "public/logs/live.log"
CONTENT_TYPE = "application/json"
VERSION = 1


def artifact_url(root_url: str, task_id: str, run_id: int, name: str) -> str:
    """getArtifact's URL, the name as one segment (as Taskcluster's clients send it)."""
    return f"{root_url.rstrip('/')}/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts/{quote(name, safe='')}"


class RunResults:
    def __init__(self, tasks: TaskTable, artifacts: Artifacts, objects: Objects, root_url: str) -> None:
        self.tasks = tasks
        self.artifacts = artifacts
        self.objects = objects
        self.root_url = root_url

    def record(self, resolution: Resolution) -> int:
        """Write the documents of the runs up to the one that resolved the task; how many."""
        task = self.tasks.load(resolution.task_id)
        if task is None:
            return 0
        runs = [run for run in task.status.runs[:resolution.run_id + 1] if run.state.is_resolved]
        return sum(self._record(task, run) for run in runs)

    def _record(self, task: TaskRecord, run: Run) -> bool:
        artifacts = self.artifacts.of_run(task.task_id, run.run_id)
        if any(artifact.name == RESULTS_NAME for artifact in artifacts):
            return False
        data = json.dumps(self.document(task, run, artifacts), indent=1).encode()
        stored = self.objects.store(object_name(task.task_id, run.run_id, RESULTS_NAME), task.summary["projectId"],
                                    task.summary["expires"], data, CONTENT_TYPE)
        self.artifacts.attach_object(task.task_id, run.run_id, RESULTS_NAME, stored)
        return True

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
