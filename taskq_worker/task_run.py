"""One claimed run, from its claim to its resolution.

Order matters: artifacts and the log are uploaded while the run is still ours (running),
then the run is resolved. The commands run in a fresh folder, one after the other, each in
a process group of its own so that stopping it (maxRunTime, a cancel, SIGTERM) also stops
whatever it started. Exit code 0 of every command is `completed`; the first other ends the
run `failed`.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import taskcluster

from taskq_worker import artifacts
from taskq_worker.live_log import BACKING_LOG_NAME, LiveLogServer, RunLog
from taskq_worker.payload import MalformedPayload, Payload, parse
from taskq_worker.run_watch import RunClient, RunWatch, StopSignal

log = logging.getLogger("taskq_worker.task_run")

LOG_NAME = "public/logs/live.log"
PASSED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ")  # never the worker's credentials
GRACE = 1.0  # seconds between SIGTERM and SIGKILL when a command is stopped


class TaskRun:
    def __init__(self, claim: dict, root_url: str, work_root: Path, live_logs: LiveLogServer | None) -> None:
        self.task_id, self.run_id = claim["status"]["taskId"], int(claim["runId"])
        self.task = claim["task"]
        self.root_url, self.live_logs = root_url, live_logs
        self.client = RunClient(root_url, claim["credentials"])
        self.signal = StopSignal()
        self.watch = RunWatch(self.client, self.task_id, self.run_id, claim["takenUntil"], self.signal)
        name = f"{self.task_id}-{self.run_id}"
        self.folder = work_root / name
        self.log = RunLog(work_root / f"{name}.log")  # beside the folder, where the task cannot clobber it

    @property
    def key(self) -> tuple[str, int]:
        return self.task_id, self.run_id

    def execute(self) -> str:
        """Run to the end and resolve; return what happened (completed, failed, or a stop reason)."""
        self.watch.start()
        try:
            outcome = self._execute()
        except Exception:
            log.exception("run crashed task=%s run=%s", self.task_id, self.run_id)
            outcome = self._resolve_exception("internal-error")
        finally:
            self.watch.finish()
            if self.live_logs is not None:   # whether or not the log was uploaded: see live_log.GONE
                self.live_logs.retire(self.log)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.log.path.unlink(missing_ok=True)
        log.info("run ended task=%s run=%s outcome=%s", self.task_id, self.run_id, outcome)
        return outcome

    def _execute(self) -> str:
        try:
            payload = parse(self.task.get("payload"))
        except MalformedPayload as reason:
            self.log.line(f"malformed payload: {reason}")
            self.log.line("nothing was run")
            self._publish_log_quietly(live=False)
            return self._resolve_exception("malformed-payload")
        live = self._start_live_log()
        outcome = self._run_commands(payload)
        if outcome == StopSignal.CANCELLED:
            self.log.line("the run was cancelled; commands stopped")
            self._publish_log_quietly(live)
            return outcome
        if outcome == StopSignal.SHUTDOWN:
            self.log.line("the worker is shutting down; commands stopped")
            self._publish_log_quietly(live)
            return self._resolve_exception("worker-shutdown")
        if not self._upload_artifacts(payload):
            outcome = "failed"  # the task did not deliver what it declared
        self.log.line(f"result: {'completed' if outcome == 'completed' else 'failed'}")
        self._publish_log_quietly(live)
        queue = self.client.queue
        (queue.reportCompleted if outcome == "completed" else queue.reportFailed)(self.task_id, str(self.run_id))
        return outcome

    # -- the commands ---------------------------------------------------------------------

    def _environment(self, payload: Payload) -> dict[str, str]:
        base = {key: os.environ[key] for key in PASSED_ENVIRONMENT if key in os.environ}
        return {**base, "HOME": str(self.folder), "TASK_ID": self.task_id, "RUN_ID": str(self.run_id),
                "TASK_GROUP_ID": self.task.get("taskGroupId", ""), "TASK_WORKDIR": str(self.folder),
                "TASKCLUSTER_ROOT_URL": self.root_url, **payload.env}

    def _run_commands(self, payload: Payload) -> str:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        for name in payload.ignored:
            self.log.line(f"payload.{name} is not supported by this worker and was ignored")
        deadline = time.monotonic() + payload.max_run_time if payload.max_run_time else None
        environment = self._environment(payload)
        for command in payload.commands:
            if self.signal.is_set():
                return self.signal.reason
            self.log.line(f"running: {shlex.join(command)}")
            try:
                process = subprocess.Popen(command, cwd=self.folder, env=environment, stdin=subprocess.DEVNULL,
                                           stdout=self.log.file, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as error:
                self.log.line(f"cannot start {command[0]!r}: {error.strerror}")
                return "failed"
            code = self._wait(process, deadline)
            if code is None:
                if self.signal.reason == StopSignal.MAX_RUN_TIME:
                    self.log.line(f"maxRunTime of {payload.max_run_time} s exceeded: stopped")
                    return "failed"
                return self.signal.reason
            self.log.line(f"exit code {code}")
            if code != 0:
                return "failed"
        return "completed"

    def _wait(self, process: subprocess.Popen, deadline: float | None) -> int | None:
        """The exit code, or None when the command had to be stopped first."""
        while True:
            try:
                return process.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                self.signal.stop(StopSignal.MAX_RUN_TIME)
            if self.signal.is_set():
                _stop_group(process)
                return None

    # -- artifacts and the log ------------------------------------------------------------

    def _expires(self, spec=None) -> str:
        return (spec and spec.expires) or self.task["expires"]

    def _upload_artifacts(self, payload: Payload) -> bool:
        """Upload what the payload declares; False if the Queue refused an upload."""
        try:
            for spec in payload.artifacts:
                self._upload_artifact(spec)
        except taskcluster.exceptions.TaskclusterFailure as failure:
            self.log.line(f"artifact upload failed: {failure}".splitlines()[0])
            log.warning("artifact upload failed task=%s run=%s error=%s", self.task_id, self.run_id,
                        _failure(failure))
            return False
        return True

    def _upload_artifact(self, spec) -> None:
        queue = self.client.queue
        files = artifacts.declared_files(self.folder, spec)
        if isinstance(files, str):
            self.log.line(f"artifact {spec.name}: {spec.path} {files.replace('-', ' ')}")
            artifacts.error_artifact(queue, self.task_id, self.run_id, spec.name, self._expires(spec), files,
                                     f"{spec.type} {spec.path} was not found in the task's folder")
            return
        for name, path in files:
            artifacts.upload_file(queue, self.task_id, self.run_id, name, path, self._expires(spec))
            self.log.line(f"artifact {name}: {path.stat().st_size} bytes uploaded")

    def _start_live_log(self) -> bool:
        """Make `live.log` a reference to the live log server, if there is one."""
        if self.live_logs is None:
            return False
        url = self.live_logs.publish(self.log)
        try:
            artifacts.reference(self.client.queue, self.task_id, self.run_id, LOG_NAME, url, self._expires())
        except taskcluster.exceptions.TaskclusterFailure as failure:
            log.warning("no live log task=%s run=%s error=%s", self.task_id, self.run_id, _failure(failure))
            self.live_logs.retire(self.log)
            return False
        return True

    def _publish_log(self, live: bool) -> None:
        """Upload the complete log. With a live log, as generic-worker does: the object is
        `live_backing.log`, and `live.log` becomes a link to it (or, where the Queue has no
        link artifacts, a reference to its URL)."""
        self.log.close()
        queue, expires = self.client.queue, self._expires()
        if not live:
            artifacts.upload_file(queue, self.task_id, self.run_id, LOG_NAME, self.log.path, expires,
                                  artifacts.LOG_CONTENT_TYPE)
            return
        artifacts.upload_file(queue, self.task_id, self.run_id, BACKING_LOG_NAME, self.log.path, expires,
                              artifacts.LOG_CONTENT_TYPE)
        try:
            artifacts.link(queue, self.task_id, self.run_id, LOG_NAME, BACKING_LOG_NAME, expires)
        except taskcluster.exceptions.TaskclusterRestFailure as failure:
            log.info("link artifact refused (%s); live.log refers to the backing log instead", failure.status_code)
            url = queue.buildUrl("getArtifact", self.task_id, str(self.run_id), BACKING_LOG_NAME)
            artifacts.reference(queue, self.task_id, self.run_id, LOG_NAME, url, expires)

    def _publish_log_quietly(self, live: bool) -> None:
        """Upload the log if the Queue takes it; the run's resolution never waits on its log
        (a cancelled run, for one, is no longer ours to add artifacts to)."""
        try:
            self._publish_log(live)
        except taskcluster.exceptions.TaskclusterFailure as failure:
            log.warning("log not uploaded task=%s run=%s error=%s; its live.log now answers that the run ended",
                        self.task_id, self.run_id, _failure(failure))

    def _resolve_exception(self, reason: str) -> str:
        try:
            self.client.queue.reportException(self.task_id, str(self.run_id), {"reason": reason})
        except taskcluster.exceptions.TaskclusterFailure as failure:
            log.warning("reportException failed task=%s run=%s reason=%s error=%s", self.task_id, self.run_id,
                        reason, _failure(failure))
        return reason


def _failure(failure: Exception) -> str:
    """A failed call in a log line: its type, HTTP status and Taskcluster code (never its
    request, which may carry credentials)."""
    body = getattr(failure, "body", None)
    code = body.get("code", "") if isinstance(body, dict) else ""
    return " ".join(str(part) for part in (type(failure).__name__, getattr(failure, "status_code", ""), code) if part)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the command's process group, then SIGKILL whatever is left of it."""
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(process, signal.SIGKILL)  # children may outlive the leader
    process.wait()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
