"""A worker the worker manager started, against a real host: its token taken out of its
environment, a refused registration ending it before any claim, credentials renewed before
they expire, and SIGTERM resolving what it holds and removing it from its pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shared.domain.ids import new_slugid
from taskq_worker.managed import RegistrationFailed, take_from_environment
from tests.conftest import ROOT, eventually, make_task
from tests.local_pools import local_pool, pool_processes

IDENTITY = {"TASKCLUSTER_ROOT_URL": "http://127.0.0.1:1", "TASKQ_WORKER_POOL_ID": "proj/linux",
            "TASKQ_PROVIDER_ID": "local", "TASKQ_WORKER_GROUP": "local", "TASKQ_WORKER_ID": "w1"}


def test_the_token_leaves_the_environment_as_it_is_read():
    environ = {**IDENTITY, "TASKQ_REGISTRATION_TOKEN": "t" * 44, "PATH": "/bin"}
    identity, token = take_from_environment(environ)
    assert token == "t" * 44 and "TASKQ_REGISTRATION_TOKEN" not in environ
    assert (identity.worker_pool_id, identity.worker_id, identity.root_url) == ("proj/linux", "w1", "http://127.0.0.1:1")
    assert take_from_environment({"PATH": "/bin"}) is None
    with pytest.raises(RegistrationFailed, match="TASKQ_WORKER_ID"):
        take_from_environment({**IDENTITY, "TASKQ_WORKER_ID": "", "TASKQ_REGISTRATION_TOKEN": "t" * 44})


def worker_log(worker_id: str) -> str:
    """The local provider's log of a worker (the host's temporary folder is this process's)."""
    return (Path(tempfile.gettempdir()) / "taskq-workers" / f"{worker_id}.log").read_text(errors="replace")


def test_a_worker_whose_registration_is_refused_exits_without_claiming(server, pool_clients, local_pool_id, tmp_path):
    pool_id = local_pool_id
    local_pool(pool_clients[0], pool_id)
    environment = {**os.environ, **IDENTITY, "TASKCLUSTER_ROOT_URL": server.root_url, "TASKQ_WORKER_POOL_ID": pool_id,
                   "TASKQ_REGISTRATION_TOKEN": new_slugid() + new_slugid(), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "taskq_worker", "--work-dir", str(tmp_path)], env=environment,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "registerWorker refused this worker" in done.stderr
    assert "does not exist" in done.stderr and "worker started" not in done.stderr


@pytest.mark.slow
def test_a_worker_renews_its_credentials_before_they_expire(pool_clients, local_pool_id):
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, idle=30, lifecycle={"reregistrationTimeout": 4})
    first = new_slugid()
    queue.createTask(first, make_task(pool_id, payload={"command": [["true"]]}))
    eventually(lambda: queue.status(first)["status"]["state"] == "completed", timeout=30, message="the first task")
    worker_id = queue.status(first)["status"]["runs"][0]["workerId"]
    # Its first credentials lasted 4 s; it has renewed them by the time it claims again.
    eventually(lambda: worker_log(worker_id).count("credentials renewed") >= 2, timeout=20, message="two renewals")
    second = new_slugid()
    queue.createTask(second, make_task(pool_id, payload={"command": [["true"]]}))
    eventually(lambda: queue.status(second)["status"]["state"] == "completed", timeout=30, message="the second task")
    assert queue.status(second)["status"]["runs"][0]["workerId"] == worker_id
    assert wm.worker(pool_id, "local", worker_id)["state"] == "running"


@pytest.mark.slow
def test_sigterm_resolves_the_run_it_holds_and_removes_the_worker(pool_clients, local_pool_id):
    wm, queue = pool_clients
    pool_id = local_pool_id
    local_pool(wm, pool_id, idle=60)
    task_id = new_slugid()
    queue.createTask(task_id, make_task(pool_id, payload={"command": [["sleep", "600"]]}, retries=0))
    eventually(lambda: queue.status(task_id)["status"]["state"] == "running", timeout=30, message="the task running")
    [pid] = pool_processes(pool_id)
    worker_id = queue.status(task_id)["status"]["runs"][0]["workerId"]
    os.killpg(pid, signal.SIGTERM)
    eventually(lambda: queue.status(task_id)["status"]["runs"][0]["state"] == "exception", timeout=20,
               message="the run resolved")
    assert queue.status(task_id)["status"]["runs"][0]["reasonResolved"] == "worker-shutdown"
    eventually(lambda: wm.worker(pool_id, "local", worker_id)["state"] == "stopped", timeout=20,
               message="the worker stopped")
    assert "leaving the pool: shut down" in worker_log(worker_id)
