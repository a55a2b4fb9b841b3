"""Follow a task's log: `public/logs/live.log`, live while the run goes on, whole once it ended.

While a run is running, the worker's `live.log` artifact is a reference to the log it serves
itself over HTTP, streamed as it grows; once the run resolved, the artifact leads to the
complete log in Blob Storage. We print each byte once: after the live stream we take from the
complete log only what the stream had not shown.
"""

from __future__ import annotations

import sys
import time

import requests
import taskcluster
from taskcluster.download import downloadArtifactToBuf

from taskq.output import PEOPLE
from taskq.states import RESOLVED

LOG_NAME = "public/logs/live.log"


def _run(queue, task_id: str, run_id: int | None) -> dict | None:
    runs = queue.status(task_id)["status"]["runs"]
    if run_id is None:
        return runs[-1] if runs else None
    return runs[run_id] if run_id < len(runs) else None


def _stream_live(queue, task_id: str, run_id: int, shown: int, write) -> int:
    """Print the live log from byte `shown` on until its stream ends; return bytes shown."""
    try:
        artifact = queue.artifact(task_id, str(run_id), LOG_NAME)
    except taskcluster.exceptions.TaskclusterRestFailure:
        return shown  # not there yet: the worker creates it as the command starts
    if artifact.get("storageType") != "reference":
        return shown
    try:
        with requests.get(artifact["url"], stream=True, timeout=(5, 60)) as response:
            response.raise_for_status()
            seen = 0
            for chunk in response.iter_content(chunk_size=None):
                fresh = chunk[max(0, shown - seen):]
                seen += len(chunk)
                if fresh:
                    write(fresh)
                    shown += len(fresh)
    except requests.RequestException:
        pass  # the worker went away or the run ended: the complete log will tell the rest
    return shown


def follow(queue, task_id: str, run_id: int | None = None, write=None, poll: float = 0.5) -> dict:
    """Print the run's log as it grows and return the run once it resolved."""
    write = write or (lambda data: (sys.stdout.buffer.write(data), sys.stdout.buffer.flush()))
    shown = 0
    while True:
        run = _run(queue, task_id, run_id)
        if run is not None and run["state"] in RESOLVED:
            break
        if run is not None and run["state"] == "running":
            shown = _stream_live(queue, task_id, run["runId"], shown, write)
        time.sleep(poll)
    try:
        whole = downloadArtifactToBuf(taskId=task_id, runId=str(run["runId"]), name=LOG_NAME, queueService=queue)[0]
    except taskcluster.exceptions.TaskclusterRestFailure as failure:
        if failure.status_code != 404 or shown:
            raise
        # A run that never started a command (cancelled while pending) has no log.
        PEOPLE.print(f"(run {run['runId']} of {task_id} has no log: {run['state']}, {run.get('reasonResolved')})",
                     markup=False)
        return run
    if len(whole) > shown:
        write(whole[shown:])
    return run
