"""How soon a waiting claimWork answers once work appears for its queue.

    python -m bench.claim_wake [--rounds N] [--waiters W] [--hosts H] [--throttle SCALE]

H local hosts (default 3) share one Azurite and one set of tables, as a Function App's
instances do. W workers wait in claimWork (tasks: 1) on one queue, all at host A. Then, one
round at a time, a task is created:
- through host A: the process holding the waiting calls, which wakes one at once;
- through each other host in turn: another process, whose work host A finds by its one poll
  of the queue shared by every waiting call (`shared/services/claims/work_signal.py`, every 0.05 s).
A round's delay is from createTask's answer to the answer of the claimWork that carries
the task (0 when the claim answers first: the host wakes the caller before it answers the
create); p50 and p95 over the rounds. The issue's target: within 100 ms at p95. The raw
storage baseline of the same Azurite is measured before and after, as in every benchmark;
the ratio is the delay in raw point reads. `--throttle` puts Azure's throttling between the
hosts and Azurite (`bench.throttled`).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

import taskcluster

from contextlib import ExitStack

from devhost.azurite import Azurite
from tests.conftest import storage_names, unique_prefix

from bench import local_host
from bench import storage_baseline
from bench import throttled
from bench.lifecycle import latency_text, run
from bench.report import percentiles, progress
from bench.tasks import task_definition

TARGET_MS = 100.0
WAIT_SECONDS = 5        # each claimWork's long poll; a round never waits that long
SETTLE = 0.3            # seconds for every waiter to be back in its long poll before a round
ROUND_TIMEOUT = 10.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.claim_wake", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=60, help="tasks created through host A, and as many through "
                                                               "the others (default 60)")
    parser.add_argument("--waiters", type=int, default=16, help="workers waiting in claimWork at host A")
    parser.add_argument("--hosts", type=int, default=3, help="instances on the one storage account (default 3)")
    throttled.add_arguments(parser)
    storage_baseline.add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def measure(azurite: Azurite, scratch: Path) -> dict:
        return {"wake": measure_wake(azurite, scratch, args.rounds, args.waiters, args.hosts, args.throttle,
                                     args.heat)}

    return run("claim_wake", args, measure, _ratio, _rows, _headline)


def shared_settings() -> dict[str, str]:
    """Hosts on the same tables and queues: one Function App's instances."""
    return {**local_host.SETTINGS, "CLAIM_WORK_WAIT_SECONDS": str(WAIT_SECONDS), **storage_names(unique_prefix())}


def measure_wake(azurite: Azurite, scratch: Path, rounds: int, waiters: int, hosts: int = 2,
                 throttle: float | None = None, heat: bool = False) -> dict:
    settings = shared_settings()
    with ExitStack() as stack:
        storage, proxy = stack.enter_context(throttled.storage(azurite, throttle, heat))
        servers = [stack.enter_context(local_host.running(storage, scratch, progress, settings))
                   for _ in range(max(2, hosts))]
        definition = task_definition(f"bench-{uuid.uuid4().hex[:8]}/wake", taskcluster.slugId())
        workers = Waiters(servers[0], definition["taskQueueId"], waiters)
        try:
            out = {"waiters": waiters, "rounds": rounds, "hosts": len(servers)}
            for name, creators in (("same process", servers[:1]), ("other process", servers[1:])):
                progress(f"{rounds} tasks created through {name} ({len(creators)} host{'s' * (len(creators) > 1)} "
                         f"in turn), {waiters} workers waiting at host A")
                out[name] = percentiles(rounds_through([server.client() for server in creators], definition,
                                                       workers, rounds))
        finally:
            workers.stop()
        if proxy:
            out["throttling"] = throttled.figures(proxy)
    return out


class Waiters:
    """Workers looping in claimWork at one host; each claimed task's answer time by taskId."""

    def __init__(self, server, task_queue_id: str, count: int) -> None:
        self.claimed_at: dict[str, float] = {}
        self.errors: list[Exception] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(server, task_queue_id, index), daemon=True)
                         for index in range(count)]
        for thread in self._threads:
            thread.start()

    def _loop(self, server, task_queue_id: str, index: int) -> None:
        queue = server.client()
        claim = {"workerGroup": "bench", "workerId": f"waiter-{index}", "tasks": 1}
        while not self._stopping.is_set():
            try:
                for answer in queue.claimWork(task_queue_id, claim)["tasks"]:
                    at = time.perf_counter()
                    task_id = answer["status"]["taskId"]
                    with self._changed:
                        self.claimed_at[task_id] = at
                        self._changed.notify_all()
                    queue.reportCompleted(task_id, str(answer["runId"]))
            except Exception as error:   # a figure, not a crash: reported with the results
                self.errors.append(error)
                time.sleep(0.5)

    def wait_for(self, task_id: str) -> float:
        with self._changed:
            if not self._changed.wait_for(lambda: task_id in self.claimed_at, ROUND_TIMEOUT):
                raise RuntimeError(f"task {task_id} was not claimed within {ROUND_TIMEOUT} s")
            return self.claimed_at[task_id]

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(WAIT_SECONDS + 5)


def rounds_through(clients: list, definition: dict, workers: Waiters, rounds: int) -> list[float]:
    """Each round's delay, the task created through each of `clients` in turn."""
    delays = []
    for number in range(rounds):
        time.sleep(SETTLE)
        task_id = taskcluster.slugId()
        clients[number % len(clients)].createTask(task_id, definition)
        created = time.perf_counter()
        delays.append(max(0.0, workers.wait_for(task_id) - created))
    if workers.errors:
        raise RuntimeError(f"{len(workers.errors)} claimWork calls failed; first: {workers.errors[0]!r}")
    return delays


def _ratio(results: dict) -> dict:
    read_ms = 1000 / results["baseline"]["reads_per_s"]
    wake = results["wake"]
    return {f"{name} p95 in raw point reads": round(wake[name]["p95_ms"] / read_ms, 1)
            for name in ("same process", "other process")}


def _rows(results: dict) -> list[tuple[str, str]]:
    wake = results["wake"]
    return [(f"2. claimWork woken by new work: {wake['hosts']} hosts, {wake['waiters']} workers waiting at host A, "
             f"one task created per round ({wake['rounds']} rounds each)", ""),
            *[(f"task created through {name}", latency_text(wake[name]))
              for name in ("same process", "other process")],
            *throttled.rows(wake.get("throttling")),
            ("3. against the baseline", ""),
            *[(name, str(value)) for name, value in results["ratio"].items()]]


def _headline(results: dict) -> str:
    wake = results["wake"]
    worst = max(wake[name]["p95_ms"] for name in ("same process", "other process"))
    return (f"claimWork answered p95 {wake['same process']['p95_ms']} ms after a createTask in its own process, "
            f"{wake['other process']['p95_ms']} ms after one in another ({'within' if worst <= TARGET_MS else 'OVER'}"
            f" the target of {TARGET_MS:.0f} ms)")


if __name__ == "__main__":
    sys.exit(main())
