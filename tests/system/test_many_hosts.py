"""Three hosts (instances of one Function App) on one Azurite and one RabbitMQ: workers
spread across them race for the same runs, run a task graph through all three, and go on
through the other two when one is SIGKILLed midway. No run is claimed twice, nothing is
lost, every task completes once, every state change is announced (once or more), and
dependents are scheduled once what they require has completed.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from shared.domain.ids import new_slugid
from tests.conftest import eventually, make_task, start_instances
from tests.system.graph_run import run_graph

HOSTS = 3
RACE_TASKS = 60
RACERS_PER_HOST = 4
GRAPH_TASKS = 60
KILLED_GRAPH_TASKS = 90
WORKERS = 12
SEED = 20261127


@pytest.fixture
def hosts(own_azurite, tmp_path, request):
    """The instances; a test marked `claims_expire_soon` has claims expire 4 s after they are
    made or last reclaimed (those a killed host made but never answered are handed out again
    then)."""
    settings = {"TASK_CLAIM_TIMEOUT": "4"} if request.node.get_closest_marker("claims_expire_soon") else {}
    servers = start_instances(own_azurite, tmp_path, HOSTS, **settings)
    yield servers
    for server in servers:
        server.stop()


@pytest.mark.slow
def test_no_run_is_claimed_twice_by_workers_racing_across_hosts(hosts, task_queue_id):
    task_ids = [new_slugid() for _ in range(RACE_TASKS)]
    for number, task_id in enumerate(task_ids):         # created through every host in turn
        hosts[number % HOSTS].client().createTask(task_id, make_task(task_queue_id))
    claims: list[tuple[str, int, int]] = []
    lock, start = threading.Lock(), threading.Barrier(HOSTS * RACERS_PER_HOST)

    def race(host: int, worker: int) -> None:
        queue = hosts[host].client()
        start.wait()                                    # every racer calls at the same moment
        while True:
            with lock:
                if len(claims) >= RACE_TASKS:
                    return
            answer = queue.claimWork(task_queue_id, {"workerGroup": "race", "workerId": f"h{host}-w{worker}",
                                                     "tasks": 1 + worker % 4})
            with lock:
                claims.extend((claim["status"]["taskId"], claim["runId"], host) for claim in answer["tasks"])
    threads = [threading.Thread(target=race, args=(host, worker))
               for host in range(HOSTS) for worker in range(RACERS_PER_HOST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    per_run = Counter((task_id, run_id) for task_id, run_id, _ in claims)
    assert [run for run, count in per_run.items() if count > 1] == []
    assert set(per_run) == {(task_id, 0) for task_id in task_ids}
    queue = hosts[0].client()
    assert {queue.status(task_id)["status"]["state"] for task_id in task_ids} == {"running"}
    assert queue.pendingTasks(task_queue_id)["pendingTasks"] == 0
    print(f"claims handed out by host: {dict(Counter(host for _, _, host in claims))}")


@pytest.mark.slow
def test_a_task_graph_runs_through_every_host(hosts, task_queue_id):
    _, workers = run_graph(hosts[1], hosts, task_queue_id, GRAPH_TASKS, 4, SEED, WORKERS)
    assert len(workers.served_by) == HOSTS                # every host handed out claims


@pytest.mark.slow
@pytest.mark.claims_expire_soon
def test_a_host_killed_midway_loses_nothing_while_the_others_serve(hosts, task_queue_id):
    victim, killed_at = hosts[0], []

    def kill_midway(workers) -> None:
        eventually(lambda: len(workers.claims) >= KILLED_GRAPH_TASKS // 3, timeout=120,
                   message="a third of the graph claimed")
        victim.stop(sig_kill=True)                      # with work in flight through it
        killed_at.append(len(workers.claims))
    runs, workers = run_graph(hosts[1], hosts, task_queue_id, KILLED_GRAPH_TASKS, 6, SEED, WORKERS, kill_midway)
    assert killed_at and victim.process.poll() is not None
    expired = sum(run.get("reasonResolved") == "claim-expired" for run in runs)
    print(f"host killed after {killed_at[0]} claims; {len(runs)} runs, {expired} claims expired with the host; "
          f"claims by host: {dict(workers.served_by)}")
