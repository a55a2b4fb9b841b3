"""How quickly the worker manager brings workers to the work, with the `local` provider.

    python -m bench.worker_manager [--empty-rounds N] [--tasks N] [--max N] [--idle S] [--removals N]

One local host on one Azurite, set as `make run` sets it (claimWork long-polls 20 s, the
provisioner's timer every 5 s); workers are real `python -m taskq_worker` processes the
local provider starts, whose number is sampled from /proc every 50 ms throughout. Figures,
beside the issue's targets (printed, not pass/fail):

1. a task created for an empty pool, claimed: from createTask's answer until the task is
   running, for pools with no worker at all (target: within 5 s, p95);
2. a burst of tasks (each a 1 s sleep) on a pool of maxCapacity M: how soon M workers are
   running (registered), and the most worker processes ever seen (target: M within 10 s,
   never M+1);
3. the same pool, idle once its tasks are done: how soon no worker process is left and
   the pool holds no capacity (target: within idleTimeoutSecs + 15 s);
4. removeWorker of a worker holding a run: how soon the run's retry is pending (target:
   within 2 s).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import taskcluster

from devhost.azurite import Azurite
from shared.domain.timestamps import parse_iso, utcnow
from tests.conftest import ROOT_CREDENTIALS, make_task
from tests.local_pools import Sampler, pool_processes

from bench import local_host
from bench import storage_baseline
from bench.lifecycle import latency_text, run
from bench.report import RESULTS, percentiles, progress

SETTINGS = {**local_host.SETTINGS, "CLAIM_WORK_WAIT_SECONDS": "20", "WORKER_MANAGER_PROVISIONER_SCHEDULE": "*/5 * * * * *"}
TARGETS = {"empty_p95_s": 5.0, "burst_s": 10.0, "idle_extra_s": 15.0, "removal_s": 2.0}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_manager", description=__doc__.split("\n")[0])
    parser.add_argument("--empty-rounds", type=int, default=12, help="tasks each created for an empty pool")
    parser.add_argument("--tasks", type=int, default=200, help="tasks of the burst (default 200)")
    parser.add_argument("--max", type=int, default=8, dest="max_capacity", help="the burst pool's maxCapacity")
    parser.add_argument("--idle", type=int, default=5, help="the burst pool's idleTimeoutSecs (default 5)")
    parser.add_argument("--removals", type=int, default=5, help="workers removed while holding a run")
    storage_baseline.add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def measure(azurite: Azurite, scratch: Path) -> dict:
        with local_host.running(azurite, scratch, progress, SETTINGS) as server:
            bench = Bench(server)
            try:
                out = {"empty": bench.empty_pool(args.empty_rounds),
                       **bench.burst(args.tasks, args.max_capacity, args.idle),
                       "removal": bench.removals(args.removals)}
                out["burst"]["passes"] = passes(server.log_path, bench.pools[1])
                return out
            finally:
                bench.close()
                RESULTS.mkdir(exist_ok=True)   # the host's log, to read what the figures do not say
                shutil.copyfile(server.log_path, RESULTS / "worker_manager-host.log")

    return run("worker_manager", args, measure, lambda results: {}, _rows, _headline)


class Bench:
    def __init__(self, server) -> None:
        options = {"rootUrl": server.root_url, "credentials": dict(ROOT_CREDENTIALS)}
        self.wm, self.queue = taskcluster.WorkerManager(options), taskcluster.Queue(options)
        self.pools: list[str] = []

    def pool(self, name: str, max_capacity: int, idle: int) -> str:
        pool_id = f"bench-{uuid.uuid4().hex[:6]}/{name}"
        self.wm.createWorkerPool(pool_id, {"providerId": "local", "description": "bench", "owner": "bench@example.com",
                                           "emailOnError": False, "config": {
                                               "maxCapacity": max_capacity, "workerConfig": {"idleTimeoutSecs": idle}}})
        self.pools.append(pool_id)
        return pool_id

    def task(self, pool_id: str, *command: str) -> str:
        task_id = taskcluster.slugId()
        self.queue.createTask(task_id, make_task(pool_id, payload={"command": [list(command)], "maxRunTime": 900}))
        return task_id

    def runs(self, task_id: str) -> list[dict]:
        return self.queue.status(task_id)["status"]["runs"]

    def empty(self, pool_id: str, timeout: float = 120) -> float:
        """Seconds until the pool has no worker process and holds no capacity."""
        start = time.perf_counter()
        while pool_processes(pool_id) or self.wm.workerPool(pool_id)["currentCapacity"]:
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"pool {pool_id} still has workers after {timeout} s")
            time.sleep(0.1)
        return time.perf_counter() - start

    def empty_pool(self, rounds: int) -> dict:
        pool_id = self.pool("empty", 1, 1)
        delays = []
        for index in range(rounds):
            self.empty(pool_id)
            task_id = self.task(pool_id, "true")
            created = time.perf_counter()
            while not self.runs(task_id) or self.runs(task_id)[0]["state"] == "pending":
                time.sleep(0.02)
            delays.append(time.perf_counter() - created)
            progress(f"  empty pool, round {index + 1}/{rounds}: claimed {delays[-1]:.2f} s after createTask")
        return percentiles(delays)

    def burst(self, tasks: int, max_capacity: int, idle: int) -> dict:
        pool_id = self.pool("burst", max_capacity, idle)
        sampler = Sampler(pool_id)
        sampler.start()
        progress(f"a burst of {tasks} tasks (1 s each) on a pool of maxCapacity {max_capacity}")
        started, started_at = time.perf_counter(), datetime.now().strftime("%H:%M:%S,%f")[:-3]
        with ThreadPoolExecutor(9) as pool:
            running = pool.submit(self.reaching, pool_id, max_capacity, started)   # watched while tasks come
            task_ids = list(pool.map(lambda _: self.task(pool_id, "sleep", "1"), range(tasks)))
            created = time.perf_counter() - started
            reached = running.result()
        progress(f"  {max_capacity} workers running {reached:.2f} s after the first createTask; waiting for the tasks")
        while any(self.queue.status(t)["status"]["state"] != "completed" for t in task_ids[-max_capacity:]):
            time.sleep(0.5)
        done = [self.queue.status(t)["status"] for t in task_ids]
        finished = time.perf_counter()
        self.empty(pool_id, idle + 120)
        last_done = max(parse_iso(status["runs"][-1]["resolved"]) for status in done)
        to_zero = (utcnow() - last_done).total_seconds()
        sampler.stopping.set()
        sampler.join()
        return {"burst": {"tasks": tasks, "max_capacity": max_capacity, "started_at": started_at,
                          "created_s": round(created, 2),
                          "reached_s": round(reached, 2) if reached else None, "most_processes": max(sampler.samples),
                          "completed": sum(s["state"] == "completed" for s in done),
                          "workers": len({s["runs"][-1].get("workerId") for s in done}),
                          "seconds": round(finished - started, 1)},
                "idle": {"idle_timeout_s": idle, "to_zero_s": round(to_zero, 2)}}

    def reaching(self, pool_id: str, count: int, started: float, timeout: float = 120) -> float | None:
        """Seconds from `started` until `count` of the pool's workers are running (registered)."""
        while time.perf_counter() - started < timeout:
            if self.wm.workerPool(pool_id)["runningCount"] >= count:
                return time.perf_counter() - started
            time.sleep(0.1)
        return None

    def removals(self, rounds: int) -> dict:
        pool_id = self.pool("removal", 1, 30)
        delays = []
        for index in range(rounds):
            task_id = self.task(pool_id, "sleep", "600")
            while not self.runs(task_id) or self.runs(task_id)[-1]["state"] != "running":
                time.sleep(0.05)
            run = self.runs(task_id)[-1]
            started = time.perf_counter()
            self.wm.removeWorker(pool_id, run["workerGroup"], run["workerId"])
            while len(self.runs(task_id)) < run["runId"] + 2:
                time.sleep(0.02)
            delays.append(time.perf_counter() - started)
            progress(f"  removal {index + 1}/{rounds}: the run's retry pending {delays[-1] * 1000:.0f} ms after "
                     "removeWorker was called")
            self.queue.cancelTask(task_id)
        return percentiles(delays)

    def close(self) -> None:
        for pool_id in self.pools:
            self.wm.deleteWorkerPool(pool_id)


def passes(log_path: Path, pool_id: str) -> list[str]:
    """The provisioner's passes that started workers for the pool, as its log tells them."""
    marker = f"worker pool {pool_id}: "
    return [line.split(" INFO")[0].split(" ", 1)[1] + " " + line.split(marker, 1)[1]
            for line in log_path.read_text(errors="replace").splitlines() if marker in line and "starting" in line]


def _verdict(ok: bool) -> str:
    return "within the target" if ok else "OVER the target"


def _rows(results: dict) -> list[tuple[str, str]]:
    empty, burst, idle, removal = results["empty"], results["burst"], results["idle"], results["removal"]
    return [
        ("2. a task created for an empty pool, until it is running (target p95 5 s)", ""),
        ("createTask to running", latency_text(empty)),
        (f"3. {burst['tasks']} tasks on a pool of maxCapacity {burst['max_capacity']} "
         f"(target: {burst['max_capacity']} running within 10 s, never more)", ""),
        ("tasks created in", f"{burst['created_s']} s (8 threads), from {burst['started_at']}"),
        (f"{burst['max_capacity']} workers running after", f"{burst['reached_s']} s"),
        ("most worker processes at once", str(burst["most_processes"])),
        ("tasks completed, by workers", f"{burst['completed']} by {burst['workers']} workers in {burst['seconds']} s"),
        *[("provisioning pass" if index == 0 else "", line) for index, line in enumerate(burst["passes"])],
        (f"4. the idle pool back to no workers (idleTimeoutSecs {idle['idle_timeout_s']}; target +15 s)", ""),
        ("last task done to no worker", f"{idle['to_zero_s']} s"),
        ("5. removeWorker of a worker holding a run, until its retry is pending (target 2 s)", ""),
        ("removeWorker to retry pending", latency_text(removal)),
    ]


def _headline(results: dict) -> str:
    empty, burst, idle, removal = results["empty"], results["burst"], results["idle"], results["removal"]
    return "; ".join([
        f"empty pool claimed p95 {empty['p95_ms'] / 1000:.2f} s ({_verdict(empty['p95_ms'] / 1000 <= 5)})",
        f"{burst['max_capacity']} workers in {burst['reached_s']} s, at most {burst['most_processes']} processes "
        f"({_verdict(burst['reached_s'] is not None and burst['reached_s'] <= 10 and burst['most_processes'] <= burst['max_capacity'])})",
        f"idle pool empty {idle['to_zero_s']} s after its last task "
        f"({_verdict(idle['to_zero_s'] <= idle['idle_timeout_s'] + 15)})",
        f"removed worker's run pending again p95 {removal['p95_ms']:.0f} ms ({_verdict(removal['p95_ms'] <= 2000)})",
    ])


if __name__ == "__main__":
    sys.exit(main())
