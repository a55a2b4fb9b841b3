"""The throttling proxy in a process of its own: its CPU beside the host's and Azurite's, not
inside either (it outlives a host killed in a test), stopped with its starter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

from devhost.processes import die_with_parent, stop_group
from devhost.throttling.proxy import COUNTS_PATH

REPO = Path(__file__).resolve().parents[2]


class ThrottledStorage:
    """Azurite (named by its connection string) behind the proxy at `scale`; `connection_string`
    goes through the proxy."""

    def __init__(self, upstream: str, scale: float, timeouts: float = 0.05, seed: int | None = None,
                 transaction_timeouts: bool = True) -> None:
        self.upstream, self.scale, self.timeouts, self.seed = upstream, scale, timeouts, seed
        self.transaction_timeouts = transaction_timeouts
        self.process: subprocess.Popen | None = None
        self.connection_string = ""
        self.ports: dict[str, int] = {}
        self._log = None

    def start(self) -> ThrottledStorage:
        command = [sys.executable, "-m", "devhost.throttling", "--scale", str(self.scale),
                   "--timeouts", str(self.timeouts)]
        if self.seed is not None:
            command += ["--seed", str(self.seed)]
        if not self.transaction_timeouts:
            command.append("--no-transaction-timeouts")
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=self._log,
                                        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent,
                                        env={**os.environ, "AzureWebJobsStorage": self.upstream})
        line = self.process.stdout.readline()   # the proxy's first line: once it listens
        if not line:
            error = self._error()
            self.stop()
            raise RuntimeError(f"the throttling proxy did not start: {error}")
        started = json.loads(line)
        self.ports, self.connection_string = started["ports"], started["connection_string"]
        return self

    def counts(self) -> dict:
        """What each partition served and refused since the start (see `targets.Throttle.counts`)."""
        return requests.get(self._counts_url, timeout=30).json()

    def reset(self) -> dict:
        """The counts so far, and counting starts again."""
        return requests.delete(self._counts_url, timeout=30).json()

    @property
    def _counts_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['table']}{COUNTS_PATH}"

    def _error(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        stop_group(self.process, grace=5)
        self.process = None
        if self._log:
            self._log.close()
            self._log = None

    def __enter__(self) -> ThrottledStorage:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

