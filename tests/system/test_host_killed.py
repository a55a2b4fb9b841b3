"""The local host is SIGKILLed at random moments while a task graph is created (in parts, by
the queue trigger), claimed and resolved by concurrent workers that claim from the start; after each kill it is restarted on the same storage. The
end state must be exactly what the scenario dictates: nothing lost, nothing done twice, and
every state change announced on the event bus, none that did not happen.

The same again with Azure's throttling between the host and Azurite (`devhost.throttling`,
its targets divided by KILL_TEST_THROTTLE): storage answers 503 ServerBusy beyond them and
sometimes 500 OperationTimedOut after a write landed, and no caller may see a 5xx for it.

CI runs bounded graphs (KILL_TEST_TASKS, default 200 tasks, 5 kills; throttled, 100 tasks,
3 kills). The larger run the issue asks for:  KILL_TEST_TASKS=500 KILL_TEST_KILLS=10 make test PYTEST_ARGS=tests/system
"""

from __future__ import annotations

import os
import random
import time

import pytest

from devhost.throttling.process import ThrottledStorage
from devhost.throttling.targets import hottest
from tests.conftest import restart_server, start_server
from tests.system.graph_run import run_graph

TASKS = int(os.environ.get("KILL_TEST_TASKS", "200"))
KILLS = int(os.environ.get("KILL_TEST_KILLS", "5"))
THROTTLED_TASKS = int(os.environ.get("KILL_TEST_THROTTLED_TASKS", "100"))
THROTTLED_KILLS = 3
# 100: 20 entities/s a table partition, 20 messages/s a queue, 200 requests/s the account,
# below what this run asks of Azurite at its busiest.
THROTTLE = float(os.environ.get("KILL_TEST_THROTTLE", "100"))
WORKERS = 8
SEED = int(os.environ.get("KILL_TEST_SEED", "20261122"))


def kill_repeatedly(server, rng: random.Random, kills: int, log: list) -> None:
    for _ in range(kills):
        time.sleep(rng.uniform(0.3, 4.0))
        server.stop(sig_kill=True)
        log.append(time.monotonic())
        time.sleep(rng.uniform(0.0, 1.0))
        restart_server(server)


def run_with_kills(victim, task_queue_id: str, tasks: int, kills: int) -> list[dict]:
    """The graph run by WORKERS workers while the host is killed `kills` times; its runs once
    every check of the end state passed."""
    killed: list[float] = []
    runs, _ = run_graph(victim, [victim], task_queue_id, tasks, max(4, tasks // 40), SEED, WORKERS,
                        lambda workers: kill_repeatedly(victim, random.Random(SEED), kills, killed))
    assert len(killed) == kills
    print(f"{tasks} tasks, {kills} kills: {len(runs)} runs, "
          f"{sum(run.get('reasonResolved') == 'claim-expired' for run in runs)} claims expired while the host was down")
    return runs


@pytest.fixture
def victim(own_azurite, tmp_path):
    server = start_server(own_azurite, tmp_path, TASK_CLAIM_TIMEOUT="4")
    yield server
    server.stop()


@pytest.fixture
def throttled(own_azurite):
    # Entity group transactions never time out here yet: one of new tasks (or of status
    # changes) that timed out after it landed loses its events (the strict xfail tests of
    # tests/storage/tables/test_task_table.py); this run found it. Every other write may.
    with ThrottledStorage(own_azurite.connection_string, THROTTLE, seed=SEED, transaction_timeouts=False) as storage:
        yield storage


@pytest.mark.timeout(1500)  # about a minute here; kills and restarts vary a lot with the machine
@pytest.mark.slow
def test_killing_the_host_loses_nothing_and_repeats_nothing(victim, task_queue_id):
    run_with_kills(victim, task_queue_id, TASKS, KILLS)


@pytest.mark.timeout(1500)
@pytest.mark.slow
def test_killing_a_throttled_host_loses_nothing_and_no_caller_sees_a_5xx(throttled, tmp_path, task_queue_id):
    victim = start_server(throttled, tmp_path, TASK_CLAIM_TIMEOUT="4")   # its storage: through the proxy
    try:
        run_with_kills(victim, task_queue_id, THROTTLED_TASKS, THROTTLED_KILLS)
    finally:
        victim.stop()
    counts = throttled.counts()
    print(f"throttled at Azure's targets / {THROTTLE:g}: {counts['account']}; hottest: {hottest(counts)}")
    assert counts["account"]["refused"] > 0             # the targets bit
