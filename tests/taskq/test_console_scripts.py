"""`taskq` and `taskq-worker` installed as commands, as `make run` installs them (pip's
editable install of pyproject.toml), answer from outside the project folder, where
`python -m taskq` cannot find the package."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv

import pytest

from tests.conftest import ROOT, make_task


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtualenv with the project installed as `make scripts` does; the packages it
    depends on come from the test run's own environment (no download but pip's build backend)."""
    where = tmp_path_factory.mktemp("scripts") / "venv"
    venv.create(where, with_pip=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "-e", str(ROOT)], check=True, timeout=600)
    return where / "bin"


def test_the_commands_work_from_any_folder(installed, server, queue, tmp_path, task_queue_id, task_id):
    environment = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"],
                   "TASKCLUSTER_ROOT_URL": server.root_url, "TASKCLUSTER_CLIENT_ID": server.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": server.credentials["accessToken"]}
    elsewhere = dict(cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
    # -S: without site's .pth files, as in an environment where `make run` has not installed
    # the commands (after it, this checkout's taskq is found from anywhere).
    lost = subprocess.run([sys.executable, "-S", "-m", "taskq", "--help"], **elsewhere)
    assert lost.returncode == 1 and "No module named taskq" in lost.stderr   # what `make run` now spares people
    queue.createTask(task_id, make_task(task_queue_id))
    status = subprocess.run([str(installed / "taskq"), "status", task_id], **elsewhere)
    assert status.returncode == 0 and status.stdout.startswith(f"{task_id} pending"), status.stderr
    worker = subprocess.run([str(installed / "taskq-worker"), "--help"], **elsewhere)
    assert worker.returncode == 0 and "--queue" in worker.stdout
