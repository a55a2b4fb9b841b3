"""What the tests of `local` worker pools share: the pool's worker processes found from
outside (as `ps` would), the environment one was started with, and making a pool."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from tests.providers.conftest import environment_of  # noqa: F401  (the tests of pools use it too)


def pool_processes(pool_id: str) -> list[int]:
    """The live worker processes started for the pool: their environment names it, and their
    parent's does not (a worker's child, forked and not yet running its command, still has
    the worker's environment)."""
    wanted = f"TASKQ_WORKER_POOL_ID={pool_id}".encode()
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X"):
                    parents[int(entry.name)] = int(fields[1])
        except OSError:
            continue
    return [pid for pid, parent in parents.items() if parent not in parents]


def kill_pool_processes(pool_id: str) -> None:
    """What a failed test may leave behind."""
    for pid in pool_processes(pool_id):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def local_pool(wm, pool_id: str, max_capacity: int = 1, idle: int | None = None, **config) -> dict:
    """A `local` pool through the official client."""
    if idle is not None:
        config["workerConfig"] = {**config.get("workerConfig", {}), "idleTimeoutSecs": idle}
    return wm.createWorkerPool(pool_id, {"providerId": "local", "description": "tests", "owner": "tests@example.com",
                                         "emailOnError": False, "config": {"maxCapacity": max_capacity, **config}})


class Sampler(threading.Thread):
    """The number of the pool's worker processes, every 50 ms, until `stopping` is set."""

    def __init__(self, pool_id: str) -> None:
        super().__init__(daemon=True)
        self.pool_id, self.samples, self.stopping = pool_id, [0], threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            self.samples.append(len(pool_processes(self.pool_id)))
