"""The local provider against real processes: started with their registration and nothing
of the host's secrets, checked, found again by a restarted host, stopped, killed when they
ignore SIGTERM, and reported gone when they die."""

from __future__ import annotations

import logging
import os
import signal
import sys

import pytest

from shared.providers.base import (
    ENV_REGISTRATION_TOKEN, ENV_WORKER_ID, ErrorClass, StartRefused, WorkerHealth, WorkerRef,
)
from shared.providers.local import LocalProvider, ProcessId
from tests.conftest import eventually
from tests.providers.conftest import SLEEPER, environment_of, make_launch, ref_of

STUBBORN = [sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                  "print('ignoring SIGTERM', flush=True)\nwhile True: time.sleep(1)"]


@pytest.fixture
def provider(tmp_path):
    instance = LocalProvider(log_dir=tmp_path, command=SLEEPER, grace=0.5)
    yield instance
    instance.close()


def health(provider, ref):
    return provider.check_workers([ref])[ref]


def test_workers_start_with_their_registration_and_none_of_the_hosts_secrets(provider, pool, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("TASKCLUSTER_ACCESS_TOKEN", "the-hosts-own-secret")
    monkeypatch.setenv("QUEUE_CREDENTIALS_ACCESS_TOKEN", "another-secret")
    launches = [make_launch(pool), make_launch(pool)]
    outcome = provider.start_workers(pool, launches)
    assert outcome.error is None and [w.worker_id for w in outcome.started] == [l.worker_id for l in launches]
    for launch, started in zip(launches, outcome.started):
        environment = environment_of(started.provider_data["pid"])
        assert environment[ENV_WORKER_ID] == launch.worker_id
        assert environment[ENV_REGISTRATION_TOKEN] == launch.registration.token
        assert "TASKCLUSTER_ACCESS_TOKEN" not in environment and "QUEUE_CREDENTIALS_ACCESS_TOKEN" not in environment
        assert health(provider, ref_of(pool, launch, started.provider_data)) is WorkerHealth.ALIVE
        assert launch.registration.token not in caplog.text and launch.registration.token not in repr(launch)
    assert f"worker {launches[0].worker_id} of pool proj/local-tests is pid" in caplog.text


def test_a_worker_whose_process_died_is_reported_gone(provider, pool):
    launch = make_launch(pool)
    started = provider.start_worker(pool, launch)
    os.kill(started.provider_data["pid"], signal.SIGKILL)
    ref = ref_of(pool, launch, started.provider_data)
    eventually(lambda: health(provider, ref) is WorkerHealth.GONE, message="the dead worker reported gone")


def test_a_stopped_worker_goes_and_stopping_again_is_harmless(provider, pool):
    launch = make_launch(pool)
    ref = ref_of(pool, launch, provider.start_worker(pool, launch).provider_data)
    provider.stop_worker(ref)
    eventually(lambda: health(provider, ref) is WorkerHealth.GONE, message="the stopped worker gone")
    provider.stop_worker(ref)
    provider.stop_worker(WorkerRef(pool.worker_pool_id, "local", "never-started"))


def test_a_worker_ignoring_sigterm_is_killed_after_the_grace(tmp_path, pool):
    provider = LocalProvider(log_dir=tmp_path, command=STUBBORN, grace=0.5)
    try:
        launch = make_launch(pool)
        ref = ref_of(pool, launch, provider.start_worker(pool, launch).provider_data)
        eventually(lambda: (tmp_path / f"{launch.worker_id}.log").read_text() == "ignoring SIGTERM\n")
        provider.stop_worker(ref)
        assert health(provider, ref) is WorkerHealth.ALIVE   # SIGTERM ignored, grace not over
        eventually(lambda: health(provider, ref) is WorkerHealth.GONE, message="the stubborn worker killed")
    finally:
        provider.close()


def test_a_restarted_host_finds_its_workers_by_record_or_by_environment(provider, pool, tmp_path):
    launch = make_launch(pool)
    started = provider.start_worker(pool, launch)
    restarted = LocalProvider(log_dir=tmp_path, command=SLEEPER)
    assert health(restarted, ref_of(pool, launch, started.provider_data)) is WorkerHealth.ALIVE
    # The host died before the worker's record got its pid: the environment names the worker.
    unrecorded = ref_of(pool, launch)
    environment_of(started.provider_data["pid"])
    assert health(restarted, unrecorded) is WorkerHealth.ALIVE
    restarted.stop_worker(unrecorded)
    eventually(lambda: health(provider, ref_of(pool, launch, started.provider_data)) is WorkerHealth.GONE)


def test_a_reused_pid_is_not_mistaken_for_the_worker(provider, pool):
    launch = make_launch(pool)
    started = provider.start_worker(pool, launch)
    elsewhere = ProcessId(started.provider_data["pid"], started.provider_data["startTicks"] - 1).to_json()
    assert health(provider, ref_of(pool, launch, elsewhere)) is WorkerHealth.GONE


def test_a_command_that_cannot_run_is_a_refused_start(tmp_path, pool):
    provider = LocalProvider(log_dir=tmp_path, command=[str(tmp_path / "no-such-worker")])
    outcome = provider.start_workers(pool, [make_launch(pool), make_launch(pool)])
    assert outcome.started == () and isinstance(outcome.error, StartRefused)
    assert outcome.error.error_class is ErrorClass.REFUSED and outcome.error.kind == "start-refused"
    assert "No such file or directory" in outcome.error.message


def test_the_default_command_is_the_projects_worker_for_the_pools_queue(tmp_path, pool):
    launch = make_launch(pool)
    command = LocalProvider(log_dir=tmp_path).command(pool, launch)
    assert command[:3] == [sys.executable, "-m", "taskq_worker"]
    assert command[command.index("--queue") + 1] == "proj/local-tests"
    assert command[command.index("--worker-id") + 1] == launch.worker_id


def test_close_stops_every_worker_and_logs_go_to_a_file_per_worker(tmp_path, pool):
    provider = LocalProvider(log_dir=tmp_path, command=[sys.executable, "-c", "print('hello', flush=True)\n"
                                                                              "import time; time.sleep(60)"])
    launches = [make_launch(pool) for _ in range(3)]
    refs = [ref_of(pool, l, provider.start_worker(pool, l).provider_data) for l in launches]
    eventually(lambda: all((tmp_path / f"{l.worker_id}.log").read_text() == "hello\n" for l in launches))
    provider.close()
    assert set(provider.check_workers(refs).values()) == {WorkerHealth.GONE}
