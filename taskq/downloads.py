"""Download a run's artifacts into a folder, each to the path its name gives.

An artifact's bytes go to a temporary file first and take its name only once complete: an
artifact that does not exist, or whose download fails, leaves no file behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import taskcluster
from taskcluster.download import downloadArtifactToFile

from taskq import log_artifacts
from taskq.failures import CommandError, describe


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


def download(queue, task_id: str, run_id: int | None, name: str, folder: Path, note=print) -> dict:
    """One artifact to its file, or why not: `{name, error, message}` (an error artifact's
    reason, or the code of what failed). A live log whose worker is gone is read from the
    complete log (`log_artifacts`)."""
    path = target(folder, name)
    part = tempfile.NamedTemporaryFile(prefix="taskq-", suffix=".part", delete=False)
    try:
        with part:
            source = log_artifacts.readable_name(queue, task_id, run_id, name, note)
            content_type = downloadArtifactToFile(file=part, taskId=task_id, name=source, queueService=queue,
                                                  **({"runId": str(run_id)} if run_id is not None else {}))
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(part.name, path)
    except taskcluster.exceptions.TaskclusterArtifactError as error:
        return {"name": name, "error": error.reason, "message": str(error)}
    except Exception as failure:   # noqa: BLE001 (each artifact's failure is reported; the others go on)
        code, message = describe(failure)
        return {"name": name, "error": code or ("NoLog" if isinstance(failure, CommandError) else "Failed"),
                "message": message}
    finally:
        if os.path.exists(part.name):
            os.unlink(part.name)
    return {"name": name, "path": str(path), "bytes": path.stat().st_size, "contentType": content_type}
