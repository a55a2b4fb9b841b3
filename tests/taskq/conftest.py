"""Running `taskq` as a person does: a separate process, pointed at a real local host by the
environment variables the official client reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.conftest import ROOT


@dataclass
class Result:
    status: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)

    def json_lines(self) -> list:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def run_taskq(server, *args: str, timeout: float = 60, cwd=None, env: dict | None = None,
              stdin: str | None = None) -> Result:
    environment = {**os.environ, "TASKCLUSTER_ROOT_URL": server.root_url,
                   "TASKCLUSTER_CLIENT_ID": server.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": server.credentials["accessToken"], **(env or {})}
    done = subprocess.run([sys.executable, "-m", "taskq", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or ROOT, env={**environment, "PYTHONPATH": str(ROOT)}, input=stdin)
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def taskq(server):
    return lambda *args, **options: run_taskq(server, *args, **options)
