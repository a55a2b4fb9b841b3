"""Task lifecycles through the HTTP API of the real local host, with the official client.

Two phases, so that each rate means one thing:
1. create: N createTask calls from W threads (each its own client and connection);
2. work: W workers, each its own client, loop claimWork (up to 4 tasks) -> reportCompleted
   until all N are completed.
Lifecycles/s is N over the wall time from the first create to the last completion.

The host runs its background work meanwhile as it would in production: the queue trigger
handling 'task resolved' events and the repair sweep. The repair delay is short (2 s) so
that the sweep's cost falls inside the measured window, as it does in a steady state.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import taskcluster

from devhost.azurite import Azurite
from tests.conftest import Server

from bench import local_host, throttled
from bench.local_host import SETTINGS as SERVER_SETTINGS, SETTLE_TIMEOUT
from bench.report import percentiles
from bench.tasks import task_definition

CLAIM_BATCH = 4
PROGRESS_EVERY = 5.0      # seconds between progress lines


@dataclass
class WorkLog:
    """What the workers saw; shared by all worker threads under `lock`."""

    target: int
    claim_batch: int = CLAIM_BATCH
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    completed: Counter = field(default_factory=Counter)   # taskId -> times completed
    completion_times: list[float] = field(default_factory=list)
    completed_at: dict[str, float] = field(default_factory=dict)   # taskId -> perf_counter time
    # When reportCompleted was sent: it answers only after the task's dependents are
    # scheduled, so a dependent can be claimed before the report's answer arrives.
    reported_at: dict[str, float] = field(default_factory=dict)
    claim_seconds: list[float] = field(default_factory=list)
    complete_seconds: list[float] = field(default_factory=list)
    claimed_per_call: Counter = field(default_factory=Counter)
    answers: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)   # (answered at, taskIds)
    first_claim: float | None = None
    not_completed: list[str] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def measure(azurite: Azurite, tasks: int, workers: int, log_dir: Path, progress, throttle: float | None = None,
            heat: bool = False) -> dict:
    """The run, its storage through the throttling or counting proxy if asked (`bench.throttled`)."""
    with throttled.storage(azurite, throttle, heat) as (storage, proxy), \
            local_host.running(storage, log_dir, progress, SERVER_SETTINGS) as server:
        if proxy:
            proxy.reset()   # the run's figures, not the host's start and warm-up
        out = _measure(server, tasks, workers, progress)
        if proxy:
            out["throttling"] = throttled.figures(proxy, tasks=tasks)
        return out


def _measure(server: Server, tasks: int, workers: int, progress) -> dict:
    definition = task_definition(f"bench-{uuid.uuid4().hex[:8]}/http", taskcluster.slugId())
    task_ids = [taskcluster.slugId() for _ in range(tasks)]

    progress(f"createTask x {tasks} from {workers} threads")
    started = time.perf_counter()
    create_seconds = create_all(server, dict.fromkeys(task_ids, definition), workers, progress)
    created = time.perf_counter()
    progress(f"created {tasks} tasks in {created - started:.2f} s; {workers} workers claim and complete")

    log = WorkLog(target=tasks)
    work_started = time.perf_counter()
    run_workers(server, definition["taskQueueId"], workers, log, progress, bound=max(120.0, tasks / 2))
    finished = max(log.completion_times)
    check(log, task_ids)
    progress(f"completed {tasks} tasks in {finished - work_started:.2f} s; waiting for the host's events")
    settle, left = local_host.settle(server, finished)
    progress(f"background events drained {settle:.1f} s after the last completion" if left is None
             else f"background queues NOT drained {SETTLE_TIMEOUT:.0f} s after the last completion: {left} left")

    total = finished - started
    return {
        "tasks": tasks,
        "workers": workers,
        "claim_batch": CLAIM_BATCH,
        "server_settings": SERVER_SETTINGS,
        "seconds": {"create": round(created - started, 3), "claim_complete": round(finished - work_started, 3),
                    "total": round(total, 3), "events_drained_after_last_completion": None if left else round(settle, 2)},
        "events_left_undrained": left,
        "lifecycles_per_s": round(tasks / total, 1),
        "creates_per_s": round(tasks / (created - started), 1),
        "claim_completes_per_s": round(tasks / (finished - work_started), 1),
        "latency": {"createTask": percentiles(create_seconds), "claimWork": percentiles(log.claim_seconds),
                    "reportCompleted": percentiles(log.complete_seconds)},
        "tasks_per_claimWork": dict(sorted(log.claimed_per_call.items())),
        "first_claim_after_work_start_s": round(log.first_claim - work_started, 3),
    }


def create_all(server: Server, definitions: dict[str, dict], threads: int, progress,
               **client_options) -> list[float]:
    """createTask for each taskId -> definition, from `threads` threads (each its own client
    and connection, a share of the tasks in order); each call's seconds. A progress line
    every few seconds."""
    task_ids = list(definitions)
    shares = [task_ids[i::threads] for i in range(threads)]
    created = Counter()
    lock = threading.Lock()

    def create(share: list[str]) -> list[float]:
        client = server.client(**client_options)
        seconds = []
        for task_id in share:
            began = time.perf_counter()
            client.createTask(task_id, definitions[task_id])
            seconds.append(time.perf_counter() - began)
            with lock:
                created["tasks"] += 1
        return seconds

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(create, share) for share in shares]
        while wait(futures, timeout=PROGRESS_EVERY).not_done:
            with lock:
                progress(f"  {created['tasks']}/{len(task_ids)} created")
        return [s for future in futures for s in future.result()]


def run_workers(server: Server, task_queue_id: str, workers: int, log: WorkLog, progress, bound: float,
                **client_options) -> None:
    """W workers, each its own official client, until `log.target` completions; a progress
    line every few seconds; fails after `bound` seconds or on a worker's error."""
    threads = start_workers(server, task_queue_id, workers, log, **client_options)
    give_up = time.monotonic() + bound
    try:
        last_line, last_count = time.monotonic(), 0
        while not log.done.wait(PROGRESS_EVERY):
            with log.lock:
                completed = sum(log.completed.values())
            now = time.monotonic()
            rate = (completed - last_count) / (now - last_line)
            progress(f"  {completed}/{log.target} completed ({rate:.1f}/s lately)")
            last_line, last_count = now, completed
            if now > give_up:
                raise RuntimeError(f"workers gave up after {bound:.0f} s: {completed}/{log.target} completed")
    finally:
        stop_workers(threads, log)
    if log.errors:
        raise RuntimeError(f"{len(log.errors)} worker calls failed; first: {log.errors[0]!r}") from log.errors[0]


def start_workers(server: Server, task_queue_id: str, workers: int, log: WorkLog,
                  **client_options) -> list[threading.Thread]:
    threads = [threading.Thread(target=worker, daemon=True,
                                args=(server.client(**client_options), task_queue_id, f"w{i}", log))
               for i in range(workers)]
    for thread in threads:
        thread.start()
    return threads


def stop_workers(threads: list[threading.Thread], log: WorkLog) -> None:
    """Tell the workers to stop and wait for their last claimWork (a long poll) to answer."""
    log.done.set()
    for thread in threads:
        thread.join(timeout=int(SERVER_SETTINGS["CLAIM_WORK_WAIT_SECONDS"]) + 30)


def worker(client: taskcluster.Queue, task_queue_id: str, worker_id: str, log: WorkLog) -> None:
    """Claim (up to `log.claim_batch` tasks) and complete until `log.done` is set."""
    payload = {"workerGroup": "bench", "workerId": worker_id, "tasks": log.claim_batch}
    try:
        while not log.done.is_set():
            began = time.perf_counter()
            claims = client.claimWork(task_queue_id, payload)["tasks"]
            answered = time.perf_counter()
            with log.lock:
                log.claim_seconds.append(answered - began)
                log.claimed_per_call[len(claims)] += 1
                log.answers.append((answered, tuple(claim["status"]["taskId"] for claim in claims)))
                if claims and log.first_claim is None:
                    log.first_claim = answered
            for claim in claims:
                _complete(client, claim, log)
    except BaseException as error:  # noqa: BLE001 - reported by the main thread
        with log.lock:
            log.errors.append(error)
        log.done.set()


def _complete(client: taskcluster.Queue, claim: dict, log: WorkLog) -> None:
    task_id = claim["status"]["taskId"]
    began = time.perf_counter()
    state = client.reportCompleted(task_id, str(claim["runId"]))["status"]["state"]
    ended = time.perf_counter()
    with log.lock:
        log.complete_seconds.append(ended - began)
        log.completion_times.append(ended)
        log.completed_at[task_id] = ended
        log.reported_at[task_id] = began
        log.completed[task_id] += 1
        if state != "completed":
            log.not_completed.append(task_id)
        if sum(log.completed.values()) >= log.target:
            log.done.set()


def check(log: WorkLog, task_ids: list[str]) -> None:
    """A fast wrong answer is no result: every task exactly once, and completed."""
    twice = [task_id for task_id, times in log.completed.items() if times > 1]
    missing = set(task_ids) - set(log.completed)
    if twice or missing or log.not_completed:
        raise RuntimeError(f"lifecycles went wrong: {len(twice)} completed twice, {len(missing)} never "
                           f"completed, {len(log.not_completed)} not 'completed' after reportCompleted")

