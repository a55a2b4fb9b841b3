"""`make worker` against a real local host, as a person starts it."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, eventually


class WorkerProcess:
    def __init__(self, server, task_queue_id: str, log_path: Path, *args: str, env: dict | None = None) -> None:
        self.log_path = log_path
        environment = {**os.environ, "TASKCLUSTER_ROOT_URL": server.root_url,
                   "TASKCLUSTER_CLIENT_ID": server.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": server.credentials["accessToken"], **(env or {})}
        environment.pop("MAKEFLAGS", None)
        worker_args = " ".join(["--worker-id", f"w{uuid.uuid4().hex[:8]}", *args])
        self.process = subprocess.Popen(["make", "--no-print-directory", "worker", f"QUEUE={task_queue_id}",
                                         f"WORKER_ARGS={worker_args}"], cwd=ROOT, env=environment,
                                        stdout=log_path.open("ab"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        eventually(lambda: "worker started" in self.log() or self.process.poll() is not None, timeout=300,
                   message="the worker starting")
        assert self.process.poll() is None, self.log()[-3000:]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self) -> None:
        """SIGTERM to make and the worker (one process group), as a service manager stops it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)

    def stop(self, timeout: float = 60) -> None:
        self.terminate()
        try:
            self.process.wait(timeout=timeout)
        finally:
            eventually(lambda: not _group_alive(self.process.pid), timeout=timeout, message="the worker exiting")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def processes_running(marker: str) -> list[int]:
    """Processes whose command line contains `marker` (a task's command, found from outside)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def start_worker(server, tmp_path):
    started = []

    def start(task_queue_id: str, *args: str, on=None, env=None) -> WorkerProcess:
        worker = WorkerProcess(on or server, task_queue_id, tmp_path / f"worker-{len(started)}.log",
                               "--work-dir", str(tmp_path / "work"), *args, env=env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
