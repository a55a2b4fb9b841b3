"""A run's artifacts, uploaded through Taskcluster's object protocol with the run's credentials.

createArtifact (storageType `object`) answers where and with which credentials to upload;
the official client's `uploadFromFile` speaks the object service; finishArtifact marks it
present. A declared file that is missing becomes an `error` artifact, as in generic-worker.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

import taskcluster
from taskcluster.upload import uploadFromFile

LOG_CONTENT_TYPE = "text/plain; charset=utf-8"


def content_type(path: Path) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def upload_file(queue, task_id: str, run_id: int, name: str, path: Path, expires: str,
                kind: str | None = None) -> None:
    kind = kind or content_type(path)
    run = str(run_id)
    answer = queue.createArtifact(task_id, run, name, {"storageType": "object", "expires": expires,
                                                       "contentType": kind})
    objects = taskcluster.Object({"rootUrl": queue.options["rootUrl"], "credentials": answer["credentials"]})
    with path.open("rb") as file:
        uploadFromFile(projectId=answer["projectId"], name=answer["name"], contentType=kind,
                       contentLength=path.stat().st_size, expires=answer["expires"], uploadId=answer["uploadId"],
                       objectService=objects, file=file)
    queue.finishArtifact(task_id, run, name, {"uploadId": answer["uploadId"]})


def error_artifact(queue, task_id: str, run_id: int, name: str, expires: str, reason: str, message: str) -> None:
    queue.createArtifact(task_id, str(run_id), name, {"storageType": "error", "expires": expires,
                                                      "reason": reason, "message": message})


def reference(queue, task_id: str, run_id: int, name: str, url: str, expires: str) -> None:
    queue.createArtifact(task_id, str(run_id), name, {"storageType": "reference", "expires": expires,
                                                      "contentType": LOG_CONTENT_TYPE, "url": url})


def link(queue, task_id: str, run_id: int, name: str, target: str, expires: str) -> None:
    queue.createArtifact(task_id, str(run_id), name, {"storageType": "link", "expires": expires,
                                                      "contentType": LOG_CONTENT_TYPE, "artifact": target})


def declared_files(folder: Path, spec) -> list[tuple[str, Path]] | str:
    """(artifact name, file) pairs for one declared artifact, or why it cannot be uploaded.
    A directory gives one artifact per file beneath it, named `<name>/<relative path>`."""
    path = (folder / spec.path).resolve()
    if folder.resolve() not in (path, *path.parents):
        return "invalid-resource-on-worker"
    if spec.type == "file":
        return [(spec.name, path)] if path.is_file() else "file-missing-on-worker"
    if not path.is_dir():
        return "file-missing-on-worker"
    return [(f"{spec.name}/{item.relative_to(path).as_posix()}", item)
            for item in sorted(path.rglob("*")) if item.is_file()]
