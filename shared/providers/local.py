"""The `local` provider: workers as processes on this machine (`python -m taskq_worker`).

Each worker runs in a session of its own (so a signal reaches the worker and whatever it
runs), with its output in `<log_dir>/<workerId>.log`, and an environment made of a few
inherited variables and its registration: never the host's own credentials or settings.
A worker is known by its pid and the kernel's start time of that pid, kept in the worker's
record, so a restarted host still tells its workers apart from unrelated processes that
reuse a pid; one whose record lost both (the host died between starting it and writing its
record) is found by the worker id in its environment.

Stopping is SIGTERM at once and SIGKILL `grace` seconds later, checked at each call rather
than waited for: the provisioner never blocks on a worker finishing its task.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from shared.domain.worker_pools import WorkerPool

from shared.providers.base import (
    ENV_WORKER_ID, Provider, QuotaExceeded, StartedWorker, StartRefused, WorkerHealth, WorkerLaunch, WorkerRef,
)

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]   # the checkout: workers run `python -m taskq_worker` from it
# Only these pass from the host's environment to a worker's (the host's holds its secrets).
INHERITED_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "PYTHONPATH", "VIRTUAL_ENV")
# A fork refused for want of room on the machine is a quota, not a broken configuration.
_NO_ROOM = {errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE}


@dataclass(frozen=True)
class ProcessId:
    """A pid, and the kernel's start time of that pid (clock ticks since boot)."""

    pid: int
    start_ticks: int

    def to_json(self) -> dict[str, int]:
        return {"pid": self.pid, "startTicks": self.start_ticks}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessId | None:
        if isinstance(data.get("pid"), int) and isinstance(data.get("startTicks"), int):
            return cls(data["pid"], data["startTicks"])
        return None


def _running_since(pid: int) -> int | None:
    """The start time of `pid` if it is running (not a zombie), from /proc/<pid>/stat."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()   # after the command name, which may hold spaces
    return None if fields[0] in ("Z", "X") else int(fields[19])


class WorkerProcesses:
    """Worker processes of this machine: started, found, checked, stopped and reaped. Shared
    by the local provider and the tests' stand-in for Azure Resource Manager."""

    def __init__(self, log_dir: Path, grace: float = 10.0):
        self.log_dir = Path(log_dir)
        self.grace = grace
        self._children: dict[int, tuple[str, subprocess.Popen]] = {}
        self._terminated: dict[ProcessId, float] = {}
        self._exit_codes: dict[int, int] = {}
        self._lock = threading.Lock()

    def spawn(self, worker_id: str, command: Sequence[str], environment: Mapping[str, str],
              cwd: Path = ROOT) -> ProcessId:
        """Raises OSError when the process cannot be started."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{worker_id}.log", "ab") as output:
            child = subprocess.Popen(list(command), env=dict(environment), cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        with self._lock:
            self._children[child.pid] = (worker_id, child)
        return ProcessId(child.pid, _running_since(child.pid) or 0)

    def alive(self, process: ProcessId) -> bool:
        self._reap()
        return _running_since(process.pid) == process.start_ticks

    def exit_code(self, process: ProcessId) -> int | None:
        """How a process this object started ended (negative: the signal), None while it runs
        or when it was not started here."""
        self._reap()
        with self._lock:
            return self._exit_codes.get(process.pid)

    def find(self, worker_ids: set[str]) -> dict[str, ProcessId]:
        """The running processes whose environment names one of `worker_ids`, in one pass
        over /proc."""
        wanted = {f"{ENV_WORKER_ID}={worker_id}".encode(): worker_id for worker_id in worker_ids}
        found: dict[str, ProcessId] = {}
        for entry in Path("/proc").iterdir() if wanted else ():
            if not entry.name.isdigit():
                continue
            try:
                environment = (entry / "environ").read_bytes().split(b"\0")
            except OSError:   # gone meanwhile, or not ours to read
                continue
            since = _running_since(int(entry.name))
            for variable in wanted.keys() & set(environment) if since is not None else ():
                found[wanted[variable]] = ProcessId(int(entry.name), since)
        return found

    def terminate(self, process: ProcessId) -> None:
        """SIGTERM to the process's session now; `escalate` sends SIGKILL after the grace."""
        if self.alive(process):
            with self._lock:
                self._terminated.setdefault(process, time.monotonic())
            self._signal(process, signal.SIGTERM)

    def escalate(self) -> None:
        now = time.monotonic()
        with self._lock:
            overdue = [process for process, since in self._terminated.items() if now - since >= self.grace]
        for process in overdue:
            if self.alive(process):
                log.warning("process %d did not stop within %s s of SIGTERM: killing it", process.pid, self.grace)
                self._signal(process, signal.SIGKILL)
            else:
                with self._lock:
                    self._terminated.pop(process, None)

    def stop_all(self, timeout: float | None = None) -> None:
        """Stop every process this object started, waiting at most `timeout` (default: the
        grace and a little) for them to go."""
        with self._lock:
            children = [ProcessId(pid, _running_since(pid) or -1) for pid in self._children]
        for process in children:
            self.terminate(process)
        give_up = time.monotonic() + (self.grace + 5 if timeout is None else timeout)
        while any(self.alive(process) for process in children) and time.monotonic() < give_up:
            self.escalate()
            time.sleep(0.05)

    def _signal(self, process: ProcessId, number: int) -> None:
        try:
            os.killpg(process.pid, number)   # its own session: the pid is the group's id
        except ProcessLookupError:
            pass

    def _reap(self) -> None:
        """Collect exited children, so none lingers as a zombie."""
        with self._lock:
            children = list(self._children.items())
        for pid, (worker_id, child) in children:
            code = child.poll()
            if code is not None:
                log.info("worker %s (pid %d) exited with status %d", worker_id, pid, code)
                with self._lock:
                    self._children.pop(pid, None)
                    self._exit_codes[pid] = code


class LocalProvider(Provider):
    provider_type = "local"

    def __init__(self, *, worker_group: str = "local", log_dir: Path | None = None,
                 command: Sequence[str] | None = None, environment: Mapping[str, str] | None = None,
                 grace: float = 10.0):
        """`command`: what runs instead of `python -m taskq_worker ...` (its identity is in its
        environment either way); `environment`: variables added to each worker's (e.g.
        EVENTS_AMQP_URL, for cancellations heard at once)."""
        self.worker_group = worker_group
        self.processes = WorkerProcesses(log_dir or Path(tempfile.gettempdir()) / "taskq-workers", grace)
        self._command = list(command) if command else None
        self._environment = dict(environment or {})

    def command(self, pool: WorkerPool, launch: WorkerLaunch) -> list[str]:
        if self._command:
            return self._command
        registration = launch.registration
        return [sys.executable, "-m", "taskq_worker", "--queue", pool.worker_pool_id,
                "--worker-group", registration.worker_group, "--worker-id", registration.worker_id,
                "--capacity", str(launch.capacity)]

    def start_worker(self, pool: WorkerPool, launch: WorkerLaunch) -> StartedWorker:
        inherited = {name: os.environ[name] for name in INHERITED_ENVIRONMENT if name in os.environ}
        environment = {**inherited, **self._environment, **launch.registration.environment()}
        try:
            process = self.processes.spawn(launch.worker_id, self.command(pool, launch), environment)
        except OSError as error:
            kind = QuotaExceeded if error.errno in _NO_ROOM else StartRefused
            raise kind(f"cannot start a worker process: {error.strerror}", details={"errno": error.errno}) from None
        log.info("local: worker %s of pool %s is pid %d (log: %s)", launch.worker_id, pool.worker_pool_id,
                 process.pid, self.processes.log_dir / f"{launch.worker_id}.log")
        return StartedWorker(launch.worker_id, process.to_json())

    def _processes_of(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, ProcessId | None]:
        recorded = {worker: ProcessId.from_json(worker.provider_data) for worker in workers}
        found = self.processes.find({worker.worker_id for worker, process in recorded.items() if process is None})
        return {worker: process or found.get(worker.worker_id) for worker, process in recorded.items()}

    def stop_worker(self, worker: WorkerRef) -> None:
        process = self._processes_of([worker])[worker]
        if process is not None:
            log.info("local: stopping worker %s (pid %d)", worker.worker_id, process.pid)
            self.processes.terminate(process)

    def check_workers(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, WorkerHealth]:
        self.processes.escalate()
        alive = self.processes.alive
        return {worker: WorkerHealth.ALIVE if process is not None and alive(process) else WorkerHealth.GONE
                for worker, process in self._processes_of(workers).items()}

    def close(self) -> None:
        self.processes.stop_all()
