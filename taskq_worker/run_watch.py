"""Keeping a claimed run: reclaim it before `takenUntil`, and notice when it is no longer ours.

A run stops being ours when someone cancels it (or its deadline passes, or the claim
expired): reclaimTask then answers 409, and the run's status no longer says `running`.
Status is read every second, so a cancel stops the command within a few seconds even
without events; the AMQP listener (`cancel_listener`) makes it immediate when there are.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

import taskcluster

log = logging.getLogger("taskq_worker.run_watch")


class StopSignal:
    """Why a run must stop before its commands end; the first reason given wins."""

    CANCELLED = "cancelled"
    SHUTDOWN = "worker-shutdown"
    MAX_RUN_TIME = "max-run-time"

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.reason: str | None = None

    def stop(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
                self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


def _parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


class RunClient:
    """The run's own Queue client, on the temporary credentials of its claim (renewed by
    each reclaim). The worker's own credentials are never used for a run's calls."""

    def __init__(self, root_url: str, credentials: dict, max_retries: int = 5) -> None:
        self._root_url, self._max_retries = root_url, max_retries
        self._lock = threading.Lock()
        self.renew(credentials)

    def renew(self, credentials: dict) -> None:
        with self._lock:
            self._queue = taskcluster.Queue({"rootUrl": self._root_url, "credentials": credentials,
                                             "maxRetries": self._max_retries})

    @property
    def queue(self) -> taskcluster.Queue:
        with self._lock:
            return self._queue


class RunWatch(threading.Thread):
    def __init__(self, client: RunClient, task_id: str, run_id: int, taken_until: str, signal: StopSignal,
                 poll: float = 1.0) -> None:
        super().__init__(name=f"watch-{task_id}-{run_id}", daemon=True)
        self.client, self.task_id, self.run_id, self.signal, self.poll = client, task_id, run_id, signal, poll
        self._done = threading.Event()
        self._schedule(taken_until)

    def _schedule(self, taken_until: str) -> None:
        until = _parse(taken_until)
        now = datetime.now(timezone.utc)
        self.reclaim_at = until - (until - now) / 3  # reclaim with a third of the claim left

    def finish(self) -> None:
        self._done.set()

    def run(self) -> None:
        while not self._done.wait(self.poll):
            try:
                if datetime.now(timezone.utc) >= self.reclaim_at:
                    self._reclaim()
                else:
                    self._check_status()
            except taskcluster.exceptions.TaskclusterRestFailure as failure:
                if failure.status_code == 409:  # resolved by someone else: cancelled, deadline, expired claim
                    log.info("run no longer ours task=%s run=%s code=%s", self.task_id, self.run_id,
                             (failure.body or {}).get("code") if isinstance(failure.body, dict) else "")
                    self.signal.stop(StopSignal.CANCELLED)
                    return
                log.warning("watching the run failed task=%s run=%s status=%s", self.task_id, self.run_id,
                            failure.status_code)
            except taskcluster.exceptions.TaskclusterConnectionError:
                log.warning("the Queue is unreachable; still running task=%s run=%s", self.task_id, self.run_id)

    def _reclaim(self) -> None:
        answer = self.client.queue.reclaimTask(self.task_id, str(self.run_id))
        self.client.renew(answer["credentials"])
        self._schedule(answer["takenUntil"])
        log.info("reclaimed task=%s run=%s takenUntil=%s", self.task_id, self.run_id, answer["takenUntil"])

    def _check_status(self) -> None:
        runs = self.client.queue.status(self.task_id)["status"]["runs"]
        if self.run_id >= len(runs) or runs[self.run_id]["state"] != "running":
            log.info("run resolved elsewhere task=%s run=%s", self.task_id, self.run_id)
            self.signal.stop(StopSignal.CANCELLED)
            self._done.set()
