"""Follow a task's log: `public/logs/live.log`, live while the run goes on, whole once it ended.

While a run is running, the worker's `live.log` artifact is a reference to the log it serves
itself over HTTP, streamed as it grows; once the run resolved, the artifact leads to the
complete log in Blob Storage. We print each byte once: after the live stream we take from the
complete log only what the stream had not shown. While there is nothing to print, what the
run waits for is said once on stderr (its dependencies, a worker on its task queue), so the
command never sits silent.
"""

from __future__ import annotations

import sys
import time

import requests
import taskcluster
from taskcluster.download import downloadArtifactToBuf

from taskq import log_artifacts
from taskq.failures import CommandError
from taskq.log_artifacts import LOG_NAME
from taskq.output import PEOPLE
from taskq.states import RESOLVED


def note(text: str) -> None:
    PEOPLE.print(text, markup=False)


def _run(queue, task_id: str, run_id: int | None) -> tuple[dict, dict | None]:
    """The task's status and the run asked for (None: the latest, while there is none yet)."""
    status = queue.status(task_id)["status"]
    runs = status["runs"]
    if run_id is None:
        return status, runs[-1] if runs else None
    if run_id >= len(runs):   # runs only ever come one after another: a later one is not a wait away
        held = f"runs 0 to {len(runs) - 1}" if len(runs) > 1 else "only run 0" if runs else "no runs yet"
        raise CommandError(f"task {task_id} has no run {run_id}: it has {held} ({status['state']})")
    return status, runs[run_id]


class Waiting:
    """Says once what the run waits for, each time that changes."""

    def __init__(self, queue, task_id: str) -> None:
        self.queue, self.task_id, self.said = queue, task_id, None
        self._looked = 0.0   # when the dependencies were last looked at

    def say(self, status: dict, run: dict | None) -> None:
        state = run["state"] if run else status["state"]
        if run is None:
            self._never_runs()
        key = (run and run["runId"], state)
        if key == self.said:
            return
        self.said = key
        if run is None:
            note(f"{self.task_id} is {state}: waiting for its dependencies to complete")
        elif state == "pending":
            note(f"run {run['runId']} of {self.task_id} is pending: waiting for a worker on "
                 f"{status['taskQueueId']}{self._no_worker_hint(status['taskQueueId'])}")
        elif state == "running":
            note(f"run {run['runId']} of {self.task_id} is running on {run['workerGroup']}/{run['workerId']}")

    def _never_runs(self, every: float = 5.0) -> None:
        """CommandError once a dependency failed that the task needed to complete: it cannot
        run, and waiting for its log would never end. Looked at every few seconds."""
        if time.monotonic() < self._looked + every:
            return
        self._looked = time.monotonic()
        task = self.queue.task(self.task_id)
        if task.get("requires", "all-completed") != "all-completed":
            return
        for dependency in task.get("dependencies", []):
            state = self.queue.status(dependency)["status"]["state"]
            if state in ("failed", "exception"):
                raise CommandError(f"{self.task_id} will never run: its dependency {dependency} is {state}, "
                                   "and it requires all its dependencies to complete")

    def _no_worker_hint(self, task_queue_id: str) -> str:
        provisioner, worker_type = task_queue_id.split("/", 1)
        try:
            if self.queue.listWorkers(provisioner, worker_type, query={"limit": 1})["workers"]:
                return ""
        except taskcluster.exceptions.TaskclusterFailure:
            return ""
        return (f" (none has claimed from it yet: start one with `make worker QUEUE={task_queue_id}` "
                f"or `taskq-worker --queue {task_queue_id}`)")


def _stream_live(queue, task_id: str, run_id: int, shown: int, write) -> tuple[int, str | None]:
    """Print the live log from byte `shown` on until its stream ends; (bytes shown, why the
    live log could not be read, if it could not)."""
    found = log_artifacts.artifact(queue, task_id, run_id, LOG_NAME)
    if found is None or found.get("storageType") != "reference":
        return shown, None  # not there yet: the worker creates it as the command starts
    try:
        with requests.get(found["url"], stream=True, timeout=(5, 60)) as response:
            response.raise_for_status()
            seen = 0
            for chunk in response.iter_content(chunk_size=None):
                fresh = chunk[max(0, shown - seen):]
                seen += len(chunk)
                if fresh:
                    write(fresh)
                    shown += len(fresh)
    except requests.RequestException as error:
        # The run ended as we read, or its worker went away: the complete log tells the rest.
        return shown, log_artifacts.why_gone(found["url"]) or type(error).__name__
    return shown, None


def follow(queue, task_id: str, run_id: int | None = None, write=None, poll: float = 0.5) -> dict:
    """Print the run's log as it grows and return the run once it resolved."""
    write = write or (lambda data: (sys.stdout.buffer.write(data), sys.stdout.buffer.flush()))
    shown, waiting, unreadable = 0, Waiting(queue, task_id), None
    while True:
        status, run = _run(queue, task_id, run_id)
        if run is not None and run["state"] in RESOLVED:
            break
        waiting.say(status, run)
        if run is not None and run["state"] == "running":
            shown, why = _stream_live(queue, task_id, run["runId"], shown, write)
            if why and why != unreadable:
                unreadable = why
                note(f"the live log cannot be read ({why}); the Queue still has run {run['runId']} running "
                     f"until {run.get('takenUntil', '?')}: waiting for it to resolve")
        time.sleep(poll)
    _print_rest(queue, task_id, run, shown, write)
    return run


def _print_rest(queue, task_id: str, run: dict, shown: int, write) -> None:
    """What the complete log holds beyond the `shown` bytes."""
    run_id = run["runId"]
    if log_artifacts.artifact(queue, task_id, run_id, LOG_NAME) is None:
        # A run that never started a command (cancelled while pending) has no log.
        note(f"(run {run_id} of {task_id} has no log: {run['state']}, {run.get('reasonResolved')})")
        return
    name = log_artifacts.readable_name(queue, task_id, run_id, LOG_NAME, note)
    whole = downloadArtifactToBuf(taskId=task_id, runId=str(run_id), name=name, queueService=queue)[0]
    if len(whole) > shown:
        write(whole[shown:])
