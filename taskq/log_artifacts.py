"""A run's log artifacts, and what to read when a worker's live log is gone.

While a run goes on, `public/logs/live.log` is a reference to its worker's live log server.
The worker then uploads the complete log as `public/logs/live_backing.log` and makes
`live.log` lead to it. When that upload did not happen (the worker died, or the Queue refused
it, as for a cancelled run), `live.log` still names a server that no longer serves it: such a
log is recognised here and the complete log read instead, or its absence said in one line.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
import taskcluster

from taskq.failures import CommandError

LOG_NAME = "public/logs/live.log"
BACKING_LOG_NAME = "public/logs/live_backing.log"


def artifact(queue, task_id: str, run_id: int | None, name: str) -> dict | None:
    """Where artifact `name` of the run is (None: the run has none of that name)."""
    try:
        return (queue.latestArtifact(task_id, name) if run_id is None
                else queue.artifact(task_id, str(run_id), name))
    except taskcluster.exceptions.TaskclusterRestFailure as failure:
        if failure.status_code == 404:
            return None
        raise


def served_by_worker(queue, found: dict | None) -> bool:
    """A reference away from the Queue: a worker's live log server (not the complete log)."""
    return bool(found) and found.get("storageType") == "reference" and \
        not found["url"].startswith(queue.options["rootUrl"].rstrip("/") + "/")


def why_gone(url: str) -> str | None:
    """Why a worker's live log cannot be read any more, or None while it is being served."""
    try:
        with requests.get(url, stream=True, timeout=(5, 10)) as response:
            if response.ok:
                return None
            return f"its worker at {urlsplit(url).netloc} answers {response.status_code}: the run has ended"
    except requests.RequestException:
        return f"its worker at {urlsplit(url).netloc} cannot be reached: it has stopped"


def readable_name(queue, task_id: str, run_id: int | None, name: str, note) -> str:
    """The artifact to read for `name`: itself, or for a live log whose worker is gone, the
    complete log (said through `note`); CommandError if there is no complete log."""
    if name != LOG_NAME:
        return name
    found = artifact(queue, task_id, run_id, name)
    if not served_by_worker(queue, found):
        return name
    gone = why_gone(found["url"])
    if gone is None:
        return name
    run = "the latest run" if run_id is None else f"run {run_id}"
    if artifact(queue, task_id, run_id, BACKING_LOG_NAME) is None:
        raise CommandError(f"the live log of {run} of {task_id} is gone ({gone}), and there is no complete log: "
                           f"its worker did not upload {BACKING_LOG_NAME}")
    note(f"the live log of {run} of {task_id} is gone ({gone}); reading the complete log, {BACKING_LOG_NAME}")
    return BACKING_LOG_NAME
