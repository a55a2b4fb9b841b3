"""The claim loop: keep up to `capacity` runs going, each on a thread of its own.

claimWork long-polls, so an idle worker costs one request per wait. On shutdown (SIGTERM)
every run it holds is stopped and resolved `exception` / `worker-shutdown`, so the Queue
retries it at once elsewhere instead of waiting for the claim to expire. A worker the
worker manager started (`managed`) also leaves when it has been idle for its pool's
idleTimeoutSecs, or, once its runs are done, when the worker manager asks it to; it removes
itself from its pool as it goes (which also has the Queue refuse it what a claimWork still
waiting there would hand it).

Shutting down does not wait out a claimWork that is still waiting at the Queue (up to 20 s):
the call runs on a thread of its own, and an idle worker exits within a second of Ctrl-C. A
task that call still hands out in the moment before the process ends is handed back
(`worker-shutdown`); one it hands out after, which no worker can prevent, is retried once its
claim expires, as after a crash.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import taskcluster

from taskq_worker.cancel_listener import CancelListener
from taskq_worker.live_log import LiveLogServer
from taskq_worker.managed import TERMINATE_POLL, ManagedWorker
from taskq_worker.run_watch import StopSignal
from taskq_worker.task_run import TaskRun

log = logging.getLogger("taskq_worker.worker")
RETRY_AFTER = 2.0
HAND_BACK_WAIT = 0.5   # seconds a shutting-down worker still waits for its claimWork's answer


class Worker:
    def __init__(self, queue: taskcluster.Queue, task_queue_id: str, worker_group: str, worker_id: str,
                 capacity: int, work_root: Path, live_logs: LiveLogServer | None, events_url: str | None,
                 managed: ManagedWorker | None = None) -> None:
        """`managed`: the worker manager's side of a worker it started (which then leaves
        when idle or asked to); None for a worker someone runs by hand."""
        self.queue, self.task_queue_id = queue, task_queue_id
        self.worker_group, self.worker_id, self.capacity = worker_group, worker_id, capacity
        self.work_root, self.live_logs, self.events_url = work_root, live_logs, events_url
        self.managed = managed
        self.stopping = threading.Event()
        self._runs: dict[tuple[str, int], tuple[TaskRun, threading.Thread]] = {}
        self._lock = threading.Lock()
        self._unanswered: ClaimCall | None = None   # a claimWork still waiting when shutdown began
        self._waiting: ClaimCall | None = None      # a claimWork a managed worker stopped waiting for

    def run(self) -> None:
        self.work_root.mkdir(parents=True, exist_ok=True)
        listener = None
        if self.events_url:
            listener = CancelListener(self.events_url, self.worker_group, self.worker_id, self.cancel)
            listener.start()
        log.info("worker started taskQueueId=%s workerGroup=%s workerId=%s capacity=%d", self.task_queue_id,
                 self.worker_group, self.worker_id, self.capacity)
        idle_since, leaving = time.monotonic(), None
        while not self.stopping.is_set():
            held = self._forget_finished()
            if held:
                idle_since = time.monotonic()
            leaving = leaving or self._leaving(idle_since)
            if leaving and not held:
                break
            free = self.capacity - held
            if free <= 0 or leaving:   # asked to terminate: the runs held finish first
                self.stopping.wait(0.2)
                continue
            claims = self._claim(free, self._idle_left(idle_since))
            if claims:
                idle_since = time.monotonic()
            for claim in claims:
                self._start(claim)
        self._stop_runs()
        if self.managed:   # first: the Queue then refuses it what a waiting claimWork would hand it
            self.managed.leave(leaving or "shut down")
        self._unanswered = self._unanswered or self._waiting
        self._hand_back_late_claims()
        if listener:
            listener.stopping.set()
        log.info("worker stopped")

    def _leaving(self, idle_since: float) -> str | None:
        """Why a managed worker leaves now: idle for idleTimeoutSecs, or asked to terminate."""
        if self.managed is None:
            return None
        timeout = self.managed.idle_timeout
        if timeout and time.monotonic() - idle_since >= timeout:
            return f"idle for {timeout:.0f} s (idleTimeoutSecs)"
        return "the worker manager asked it to terminate" if self.managed.should_terminate() else None

    def _idle_left(self, idle_since: float) -> float | None:
        """How long a claim may wait before a managed worker looks at leaving again (None: as
        long as the Queue holds it)."""
        if self.managed is None:
            return None
        timeout = self.managed.idle_timeout
        left = timeout - (time.monotonic() - idle_since) if timeout else TERMINATE_POLL
        return max(0.0, min(left, TERMINATE_POLL))

    def shutdown(self) -> None:
        """Stop claiming and stop every run (called from the SIGTERM handler)."""
        self.stopping.set()
        with self._lock:
            for run, _thread in self._runs.values():
                run.signal.stop(StopSignal.SHUTDOWN)

    def cancel(self, task_id: str, run_id: int) -> None:
        with self._lock:
            held = self._runs.get((task_id, run_id))
        if held:
            log.info("cancellation heard task=%s run=%s", task_id, run_id)
            held[0].signal.stop(StopSignal.CANCELLED)

    def _claim(self, free: int, wait: float | None = None) -> list[dict]:
        """The tasks a claimWork got: [] when it failed, when shutdown began (the call is
        handed back at the end), or when it still waits after `wait` seconds (the same call
        is waited for next time)."""
        call = self._waiting or ClaimCall(self.queue, self.task_queue_id, {
            "workerGroup": self.worker_group, "workerId": self.worker_id, "tasks": free})
        self._waiting = None
        give_up = None if wait is None else time.monotonic() + wait
        while not call.done.wait(0.1):
            if self.stopping.is_set():
                self._unanswered = call
                return []
            if give_up is not None and time.monotonic() >= give_up:
                self._waiting = call
                return []
        if call.failure is not None:
            log.warning("claimWork failed error=%s; retrying in %.0f s", str(call.failure).splitlines()[0][:200],
                        RETRY_AFTER)
            self.stopping.wait(RETRY_AFTER)
            return []
        return call.tasks

    def _hand_back_late_claims(self) -> None:
        """Resolve `worker-shutdown` what the claimWork left waiting at shutdown still hands out."""
        call, self._unanswered = self._unanswered, None
        if call is None:
            return
        if not call.done.wait(HAND_BACK_WAIT):
            log.info("stopped without waiting out claimWork's long poll")
            return
        for claim in call.tasks:
            task_id, run_id = claim["status"]["taskId"], str(claim["runId"])
            try:
                taskcluster.Queue({"rootUrl": self.queue.options["rootUrl"], "credentials": claim["credentials"]}
                                  ).reportException(task_id, run_id, {"reason": "worker-shutdown"})
                log.info("claimed while stopping, handed back task=%s run=%s", task_id, run_id)
            except taskcluster.exceptions.TaskclusterFailure as failure:
                log.warning("could not hand back task=%s run=%s error=%s", task_id, run_id,
                            str(failure).splitlines()[0][:200])

    def _start(self, claim: dict) -> None:
        run = TaskRun(claim, self.queue.options["rootUrl"], self.work_root, self.live_logs)
        log.info("claimed task=%s run=%s", run.task_id, run.run_id)
        thread = threading.Thread(target=run.execute, name=f"run-{run.task_id}-{run.run_id}")
        with self._lock:
            self._runs[run.key] = (run, thread)
            if self.stopping.is_set():  # claimed while shutting down: hand it back at once
                run.signal.stop(StopSignal.SHUTDOWN)
        thread.start()

    def _forget_finished(self) -> int:
        """Drop finished runs; return how many are still going."""
        with self._lock:
            for key in [key for key, (_run, thread) in self._runs.items() if not thread.is_alive()]:
                del self._runs[key]
            return len(self._runs)

    def _stop_runs(self, timeout: float = 60) -> None:
        give_up = time.monotonic() + timeout
        with self._lock:
            held = list(self._runs.values())
        for run, thread in held:
            run.signal.stop(StopSignal.SHUTDOWN)
            thread.join(max(0.0, give_up - time.monotonic()))


class ClaimCall:
    """One claimWork call, made on a daemon thread; `done` is set once it answered or failed."""

    def __init__(self, queue: taskcluster.Queue, task_queue_id: str, request: dict) -> None:
        self.tasks: list[dict] = []
        self.failure: Exception | None = None
        self.done = threading.Event()
        threading.Thread(target=self._call, args=(queue, task_queue_id, request), name="claim-work",
                         daemon=True).start()

    def _call(self, queue: taskcluster.Queue, task_queue_id: str, request: dict) -> None:
        try:
            self.tasks = queue.claimWork(task_queue_id, request)["tasks"]
        except taskcluster.exceptions.TaskclusterFailure as failure:
            self.failure = failure
        finally:
            self.done.set()
