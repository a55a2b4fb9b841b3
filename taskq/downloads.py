"""Download a run's artifacts into a folder, each to the path its name gives."""

from __future__ import annotations

from pathlib import Path

import taskcluster
from taskcluster.download import downloadArtifactToFile


def list_artifacts(queue, task_id: str, run_id: int | None) -> list[dict]:
    artifacts, token = [], None
    while True:
        query = {"continuationToken": token} if token else {}
        page = (queue.listLatestArtifacts(task_id, query=query) if run_id is None
                else queue.listArtifacts(task_id, str(run_id), query=query))
        artifacts += page["artifacts"]
        token = page.get("continuationToken")
        if not token:
            return artifacts


def target(folder: Path, name: str) -> Path:
    """Where artifact `name` goes inside `folder`; a name cannot lead out of it."""
    path = (folder / name).resolve()
    if folder.resolve() not in path.parents:
        raise ValueError(f"artifact name {name!r} points outside {folder}")
    return path


def download(queue, task_id: str, run_id: int | None, name: str, folder: Path) -> dict:
    """One artifact to its file; an error artifact is reported, not written."""
    path = target(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("wb") as file:
            content_type = downloadArtifactToFile(file=file, taskId=task_id, name=name, queueService=queue,
                                                  **({"runId": str(run_id)} if run_id is not None else {}))
    except taskcluster.exceptions.TaskclusterArtifactError as error:
        path.unlink(missing_ok=True)
        return {"name": name, "error": error.reason, "message": str(error)}
    return {"name": name, "path": str(path), "bytes": path.stat().st_size, "contentType": content_type}
