"""A task graph of N tasks, created in one request and run to completion, beside the storage
it is made of.

    python -m bench.graph [--tasks N] [--workers W]

The graph (default N = 10,000) has three parts, each testing something else:
- fan-out: one root task required by about 95% of the tasks (one resolution that
  schedules thousands of dependents);
- fan-in: one task requiring every child (a task with thousands of requirements);
- chain: the last 5% of the tasks, each requiring the previous one (sequential latency: each
  link is a completion, a 'task resolved' event and a claim, one after another).

One Azurite (in memory, free ports) serves every measurement:
1. the raw storage baseline (single-entity inserts and point reads), the yardstick;
2. the graph over HTTP against the real local host: one PUT to the scheduler API with raw
   `requests`, then W no-op workers (each its own official taskcluster client) loop
   claimWork (up to 32 tasks) -> reportCompleted until GET .../status says finished;
3. the ratio of the two;
4. storage operations per task and per edge, counted exactly in-process over a smaller
   graph of the same shape, step by step (create, claim, complete, event handling, the
   repair sweep);
then the baseline once more, to show whether Azurite slowed down as its tables grew.
See bench/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import requests
import taskcluster

from devhost.azurite import Azurite
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.queue import Queue
from tests.conftest import Server

from . import http_lifecycles, local_host, storage_baseline
from .lifecycle import baseline, baseline_rows, latency_text
from .operation_counts import (REPAIR_DELAY, Labeller, Step, counted_step, deliver_events, expect, messages_left,
                               settings_for)
from .report import RESULTS, command_line, elapsed, header, machine, percentiles, progress, table, write_json
from .tasks import task_definition

CLAIM_BATCH = 32          # the most claimWork hands out in one answer
STATUS_POLL = 1.0         # seconds between GET .../status while the graph runs
PROGRESS_EVERY = 10.0     # seconds between progress lines
DEADLINE = timedelta(hours=12)   # the tasks must outlive the longest run the bound allows
ROOT, FAN_IN = "root", "fan-in"
# Workers retry as the official client does by default (5xx and connection errors, with
# backoff): a long run on a busy machine meets a transient storage error now and then, and
# a real worker would not give up. Every 5xx the host answered is counted from its log.
WORKER_RETRIES = 5
PUT_ATTEMPTS = 3          # createTaskGraph is idempotent: the same request again resumes it
STATUS_FAILURES = 5       # consecutive failed status polls before the run fails
# A claimWork answer lost to a 5xx leaves its tasks claimed until the claim expires: five
# minutes, not the default twenty, so such a loss shows in the figures without ruining them.
SETTINGS = {**local_host.SETTINGS, "TASK_CLAIM_TIMEOUT": "300"}


# -- the graph ----------------------------------------------------------------------------

def shape(n: int, chain_share: float = 0.05) -> dict[str, list[str]]:
    """label -> the labels it requires: a root, its children, a fan-in requiring them all,
    then a chain of `chain_share` of the tasks (the chain measures latency, one link at a
    time; at 0.5 s a link, half of 10,000 tasks would be a 40-minute chain)."""
    if n < 4:
        raise ValueError("a graph needs at least 4 tasks (root, 2 children, fan-in)")
    links = min(round(n * chain_share), n - 4)
    children = [f"child-{i:05d}" for i in range(n - links - 2)]
    chain = [f"chain-{i:05d}" for i in range(links)]
    requires = {ROOT: [], **{child: [ROOT] for child in children}, FAN_IN: list(children)}
    previous = FAN_IN
    for link in chain:
        requires[link] = [previous]
        previous = link
    return requires


def parts(requires: dict[str, list[str]]) -> dict[str, list[str]]:
    return {"children": [label for label in requires if label.startswith("child-")],
            "chain": [label for label in requires if label.startswith("chain-")]}


def edges(requires: dict[str, list[str]]) -> int:
    return sum(len(required) for required in requires.values())


def graph_request(requires: dict[str, list[str]], task_queue_id: str, graph_id: str) -> dict:
    """The createTaskGraph body: every node the same no-op task, like the tasks of one decision."""
    task = task_definition(task_queue_id, graph_id, deadline=to_iso(utcnow() + DEADLINE))
    return {"tasks": {label: ({"requires": required, "task": task} if required else {"task": task})
                      for label, required in requires.items()}}


# -- 2. over HTTP -------------------------------------------------------------------------

def measure_http(azurite: Azurite, n: int, workers: int, bound: float, log_dir: Path) -> dict:
    with local_host.running(azurite, log_dir, progress, SETTINGS) as server:
        out = _measure_http(server, n, workers, bound)
    out["host_errors"] = _host_errors(server.log_path)
    if out["host_errors"]["http_5xx"] or "failed" in out:
        RESULTS.mkdir(exist_ok=True)
        out["host_log"] = str(shutil.copy(server.log_path, RESULTS / f"graph-devhost-{server.log_path.name}"))
        progress(f"host log kept: {out['host_log']}")
    if out["host_errors"]["http_5xx"]:
        progress(f"the host answered {sum(out['host_errors']['http_5xx'].values())} requests with 5xx "
                 f"(retried by the clients): {out['host_errors']['http_5xx']}")
    return out


def _measure_http(server: Server, n: int, workers: int, bound: float) -> dict:
    graph_id = taskcluster.slugId()
    requires = shape(n)
    task_queue_id = f"bench-{uuid.uuid4().hex[:8]}/graph"
    body = json.dumps(graph_request(requires, task_queue_id, graph_id)).encode()
    base = f"{server.root_url}/api/scheduler/v1/task-graph/{graph_id}"
    out = {"tasks": n, "edges": edges(requires), "children": len(parts(requires)["children"]),
           "chain": len(parts(requires)["chain"]), "workers": workers, "claim_batch": CLAIM_BATCH,
           "request_bytes": len(body), "bound_s": bound, "server_settings": SETTINGS,
           "worker_client_max_retries": WORKER_RETRIES,
           "taskGraphId": graph_id}
    session = requests.Session()

    progress(f"PUT task-graph {graph_id}: {n} tasks, {out['edges']} edges, {len(body) / 1e6:.1f} MB of JSON")
    put_started = time.perf_counter()
    attempts = []
    for _ in range(PUT_ATTEMPTS):
        began = time.perf_counter()
        try:
            answer = session.put(base, data=body, headers={"Content-Type": "application/json"}, timeout=bound)
        except requests.RequestException as error:
            answer = None
            attempts.append({"error": repr(error), "seconds": round(time.perf_counter() - began, 3)})
        else:
            attempts.append({"status": answer.status_code, "seconds": round(time.perf_counter() - began, 3)})
            if answer.status_code < 500:
                break
            attempts[-1]["body"] = answer.text[:2000]
        progress(f"PUT attempt {len(attempts)} failed: {attempts[-1]}")
    put_answered = time.perf_counter()
    out["put"] = {"attempts": attempts, "seconds": round(put_answered - put_started, 3)}
    if answer is None or answer.status_code != 200:
        return _failed(out, server, f"PUT failed after {out['put']['seconds']} s: {attempts[-1]}"
                                    + (f" {answer.text[:2000]}" if answer is not None else ""))
    progress(f"created in {put_answered - put_started:.2f} s ({n / (put_answered - put_started):.1f} tasks/s); "
             f"graph {answer.json()['status']['state']}; {workers} workers claim (<= {CLAIM_BATCH}) and complete")

    log = http_lifecycles.WorkLog(target=n, claim_batch=CLAIM_BATCH)
    threads = [threading.Thread(target=http_lifecycles.worker, daemon=True,
                                args=(server.client(maxRetries=WORKER_RETRIES), task_queue_id, f"w{i}", log))
               for i in range(workers)]
    for thread in threads:
        thread.start()
    try:
        finished_seen, polls, failure = _until_finished(session, base, log, put_answered, bound)
    finally:
        log.done.set()
        for thread in threads:
            thread.join(timeout=int(local_host.SETTINGS["CLAIM_WORK_WAIT_SECONDS"]) + 30)
    out["status_polls"] = polls
    if failure is None and log.errors:
        failure = f"{len(log.errors)} worker calls failed; first: {log.errors[0]!r}"
    if failure is not None:
        with log.lock:
            out["completed_before_failure"] = sum(log.completed.values())
        return _failed(out, server, failure)

    last = max(log.completion_times)
    progress(f"finished: last completion {last - put_answered:.1f} s after the PUT answered; "
             f"status 'finished' seen {finished_seen - last:.1f} s later. GET .../inspect to check")
    inspect_started = time.perf_counter()
    inspected = session.get(f"{base}/inspect", timeout=600)
    inspect_seconds = time.perf_counter() - inspect_started
    if inspected.status_code != 200:
        return _failed(out, server, f"GET inspect answered {inspected.status_code}: {inspected.text[:2000]}")
    labels = {entry["taskId"]: entry["label"] for entry in inspected.json()["tasks"]}
    states = Counter(entry["state"] for entry in inspected.json()["tasks"])
    if len(labels) != n or states != Counter({"completed": n}):
        return _failed(out, server, f"inspect after 'finished' shows {len(labels)} tasks in states {dict(states)}")
    try:
        http_lifecycles.check(log, list(labels))
    except RuntimeError as wrong:
        return _failed(out, server, str(wrong))
    settled, left = local_host.settle(server, last)
    progress(f"inspect: {inspect_seconds:.1f} s for {n} tasks; host's event queues "
             + (f"drained {settled:.1f} s after the last completion" if left is None else f"NOT drained: {left}"))

    by_label = {labels[task_id]: at for task_id, at in log.completed_at.items()}
    out.update(_timings(requires, by_label, put_started, put_answered, last, finished_seen))
    out["seconds"]["inspect"] = round(inspect_seconds, 3)
    out["seconds"]["events_drained_after_last_completion"] = None if left else round(settled, 2)
    out["events_left_undrained"] = left
    out["latency"] = {"claimWork": percentiles(log.claim_seconds), "reportCompleted": percentiles(log.complete_seconds)}
    out["tasks_per_claimWork"] = dict(sorted(log.claimed_per_call.items()))
    return out


def _until_finished(session: requests.Session, base: str, log, started: float,
                    bound: float) -> tuple[float, int, str | None]:
    """Poll GET .../status until 'finished'; (when it was seen, polls, why it failed or None)."""
    give_up = time.monotonic() + bound
    polls, failures, last_line, last_count = 0, 0, time.monotonic(), 0
    while True:
        polls += 1
        try:
            answer = session.get(f"{base}/status", timeout=60)
            problem = None if answer.status_code == 200 else f"answered {answer.status_code}: {answer.text[:2000]}"
        except requests.RequestException as error:
            problem = f"raised {error!r}"
        if problem is not None:
            failures += 1
            if failures >= STATUS_FAILURES:
                return time.perf_counter(), polls, f"GET status failed {failures} times in a row; last {problem}"
            time.sleep(STATUS_POLL)
            continue
        failures = 0
        state = answer.json()["status"]["state"]
        if state == "finished":
            return time.perf_counter(), polls, None
        with log.lock:
            completed, errors = sum(log.completed.values()), len(log.errors)
        if errors:
            return time.perf_counter(), polls, f"{errors} worker calls failed; first: {log.errors[0]!r}"
        if state != "running":
            return time.perf_counter(), polls, f"the graph is {state} with {completed}/{log.target} completed"
        now = time.monotonic()
        if now - last_line >= PROGRESS_EVERY:
            progress(f"  {completed}/{log.target} completed ({(completed - last_count) / (now - last_line):.1f}/s "
                     f"lately, {completed / (time.perf_counter() - started):.1f}/s since the PUT); graph {state}")
            last_line, last_count = now, completed
        if now > give_up:
            return time.perf_counter(), polls, (f"not finished within the bound of {bound:.0f} s: "
                                                f"{completed}/{log.target} completed, graph {state}")
        time.sleep(STATUS_POLL)


def _timings(requires: dict[str, list[str]], at: dict[str, float], put_started: float, put_answered: float,
             last: float, finished_seen: float) -> dict:
    """Overall rates, and each part of the graph on its own (from the workers' completion times)."""
    n, split = len(requires), parts(requires)
    children, chain = split["children"], split["chain"]
    root_done, fan_in_done = at[ROOT], at[FAN_IN]
    children_first, children_done = min(at[c] for c in children), max(at[c] for c in children)
    chain_done = at[chain[-1]] if chain else fan_in_done
    put = put_answered - put_started
    run = last - put_answered
    return {
        "seconds": {
            "create_put": round(put, 3),
            "run_after_put": round(run, 3),
            "total_put_to_last_completion": round(last - put_started, 3),
            "total_put_to_finished_seen": round(finished_seen - put_started, 3),
            "finished_seen_after_last_completion": round(finished_seen - last, 3),
        },
        "rates": {
            "created_per_s": round(n / put, 1),
            "completed_per_s_after_put": round(n / run, 1),
            "tasks_per_s_overall": round(n / (last - put_started), 1),
        },
        "parts": {
            "root": {"completed_after_put_s": round(root_done - put_answered, 3)},
            "fan_out": {"tasks": len(children),
                        "first_child_after_root_s": round(children_first - root_done, 3),
                        "seconds": round(children_done - root_done, 3),
                        "tasks_per_s": round(len(children) / (children_done - root_done), 1)},
            "fan_in": {"requirements": len(children),
                       "completed_after_last_child_s": round(fan_in_done - children_done, 3)},
            "chain": {"tasks": len(chain), "seconds": round(chain_done - fan_in_done, 3),
                      "seconds_per_link": round((chain_done - fan_in_done) / len(chain), 4) if chain else None,
                      "tasks_per_s": round(len(chain) / (chain_done - fan_in_done), 1) if chain else None},
        },
    }


_REQUEST_LINE = re.compile(r"devhost\.http: (\w+) (\S+) -> (\d{3})")


def _host_errors(log_path: Path) -> dict:
    """What went wrong inside the host during the run, from its log: requests answered with
    5xx (by API call), claims that expired (tasks claimed by an answer the worker never got
    wait for that), and logged errors and warnings (by logger)."""
    http_5xx, logged, expired = Counter(), Counter(), 0
    for line in log_path.read_text(errors="replace").splitlines():
        expired += "queue.time: task" in line and line.endswith(": claim expired")
        request = _REQUEST_LINE.search(line)
        if request and request.group(3).startswith("5"):
            http_5xx[f"{request.group(3)} {request.group(1)} {_call(request.group(2))}"] += 1
        level = re.match(r"\S+ \S+ (ERROR|WARNING) +(\S+):", line)
        if level:
            logged[f"{level.group(1)} {level.group(2)}"] += 1
    return {"http_5xx": dict(http_5xx), "claims_expired": expired, "logged": dict(logged.most_common())}


def _call(path: str) -> str:
    for marker, name in (("/claim-work/", "claimWork"), ("/completed", "reportCompleted"), ("/status", "status"),
                         ("/inspect", "inspect"), ("/task-graph/", "createTaskGraph")):
        if marker in path:
            return name
    return path


def _failed(out: dict, server: Server, reason: str) -> dict:
    """The evidence of a failed run: why, and what the host logged last."""
    progress(f"FAILED: {reason}")
    tail = server.log_path.read_text(errors="replace").splitlines()[-60:]
    progress("host log tail:\n    " + "\n    ".join(tail))
    out["failed"] = reason
    out["host_log_tail"] = tail
    return out


# -- 4. operations, counted in-process ------------------------------------------------------

STEPS = ("createTaskGraph", "claimWork", "reportCompleted", "task-resolved event", "repair sweep")
READS = ("getTaskGraphStatus", "inspectTaskGraph")


def count_operations(connection: str, n: int) -> dict:
    """Storage operations of a graph of `n` tasks, the same shape, run step by step in this
    process from one thread: each step's delta is its own cost, uncontended."""
    settings = settings_for(connection)
    with Labeller(settings.table_prefix) as labeller:
        services = Queue.build(settings)
        # A small graph first: every table and queue then exists and nothing first-time is counted.
        _run_counted(services, labeller, settings, 4, {name: Step(name) for name in STEPS + READS})
        progress(f"counting storage operations over a graph of {n} tasks in-process (one thread, "
                 f"<= {CLAIM_BATCH} tasks per claimWork)")
        steps = {name: Step(name) for name in STEPS + READS}
        rounds = _run_counted(services, labeller, settings, n, steps)
    return _operation_summary(steps, n, edges(shape(n)), rounds)


def _run_counted(services: Queue, labeller: Labeller, settings, n: int, steps: dict[str, Step]) -> int:
    """Create the graph, then rounds of: claim all that is pending, complete it, deliver the
    'task resolved' events (which schedule the dependents); the repair sweep at the end."""
    graph_id = new_slugid()
    task_queue_id = f"bench-{settings.table_prefix}/graph"
    create, claim, complete, events, repairs = (steps[name] for name in STEPS)
    with counted_step(labeller, create):
        services.task_graphs.create(graph_id, graph_request(shape(n), task_queue_id, graph_id))
        create.calls += 1
    rounds = resolved = 0
    while True:
        with counted_step(labeller, claim):
            claimed = _claim_pending(services, task_queue_id, claim)
        if not claimed:
            break
        rounds += 1
        with counted_step(labeller, complete):
            for task_id, run_id in claimed:
                services.resolutions.completed(task_id, run_id)
                complete.calls += 1
        with counted_step(labeller, events):
            events.calls += deliver_events(services)
        resolved += len(claimed)
    expect(resolved == n, f"{resolved} of {n} tasks were claimed before nothing was pending")
    expect(events.calls == n, f"{events.calls} 'task resolved' events for {n} resolutions")
    with counted_step(labeller, steps["getTaskGraphStatus"]):
        state = services.task_graphs.status(graph_id)["status"]["state"]
        steps["getTaskGraphStatus"].calls += 1
    expect(state == "finished", f"the graph is {state} after all its tasks completed")
    time.sleep(REPAIR_DELAY + 1.1)  # the last intents become visible whole seconds after they were sent
    repaired = 0
    with counted_step(labeller, repairs):
        for _ in range(1000):
            repaired += services.repairs.sweep()
            if not messages_left(settings.storage_connection, settings.repair_queue):
                break
    left = messages_left(settings.storage_connection, settings.repair_queue)
    expect(left == 0, f"{left} repair intents still queued after the sweep")
    expect(repaired == 0, f"the sweep repaired {repaired} resolutions that were already handled")
    repairs.calls = n
    with counted_step(labeller, steps["inspectTaskGraph"]):
        inspected = services.task_graphs.inspect(graph_id)
        steps["inspectTaskGraph"].calls += 1
    expect(len(inspected["tasks"]) == n and all(t["state"] == "completed" for t in inspected["tasks"]),
           "inspect does not show every task completed")
    return rounds


def _claim_pending(services: Queue, task_queue_id: str, step: Step) -> list[tuple[str, int]]:
    """Claim until an answer is not full: everything pending now (one thread, no contention)."""
    claimed: list[tuple[str, int]] = []
    while True:
        answer = services.claims.claim_work(task_queue_id, "bench", "counter", CLAIM_BATCH)["tasks"]
        step.calls += 1
        claimed += [(task["status"]["taskId"], task["runId"]) for task in answer]
        if len(answer) < CLAIM_BATCH:
            return claimed


def _operation_summary(steps: dict[str, Step], n: int, edge_count: int, rounds: int) -> dict:
    out = {"tasks": n, "edges": edge_count, "rounds": rounds, "claim_batch": CLAIM_BATCH, "steps": {}, "reads": {}}
    for name, step in steps.items():
        figures = {"operations": step.operations, "calls": step.calls, "seconds": round(step.seconds, 3),
                   "by_kind": dict(step.kinds.most_common())}
        if name in READS:
            out["reads"][name] = figures
            continue
        figures.update(per_task=round(step.operations / n, 2), per_edge=round(step.operations / edge_count, 2),
                       by_kind_per_task={kind: round(number / n, 2) for kind, number in step.kinds.most_common()})
        out["steps"][name] = figures
    api = sum(steps[name].operations for name in STEPS[:3])
    background = sum(steps[name].operations for name in STEPS[3:])
    out["api_per_task"] = round(api / n, 2)
    out["background_per_task"] = round(background / n, 2)
    out["total"] = api + background
    out["total_per_task"] = round((api + background) / n, 2)
    out["total_per_edge"] = round((api + background) / edge_count, 2)
    return out


# -- the run --------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.graph", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks in the graph over HTTP (default 10,000, "
                                                                  "the most one request may hold)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent no-op workers (default 8)")
    parser.add_argument("--count", type=int, default=500, help="tasks of the graph whose storage operations are "
                                                               "counted in-process (default 500)")
    parser.add_argument("--bound", type=float, default=None, help="seconds the PUT, and then the run, may take "
                                                                  "before the run fails (default 600 + 0.5 s per task)")
    storage_baseline.add_arguments(parser)
    parser.add_argument("--skip-http", action="store_true", help="leave out the HTTP run (no local host needed)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    bound = args.bound if args.bound is not None else 600 + 0.5 * args.tasks
    info = machine()
    print(header(info), flush=True)
    results = {"command": command_line("bench.graph"), "machine": info}
    with Azurite() as azurite, tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        progress(f"Azurite up (in memory), tables on port {azurite.ports['table']}")
        results["baseline"] = baseline(azurite, args, "before")
        if not args.skip_http:
            results["http"] = measure_http(azurite, args.tasks, args.workers, bound, Path(scratch))
        results["operations"] = count_operations(azurite.connection_string, args.count)
        results["baseline_after"] = baseline(azurite, args, "after")
    results["ratio"] = _ratio(results)
    results["seconds"] = round(elapsed(), 1)
    print(table(_rows(results)), flush=True)
    print(f"\nresults: {write_json('graph', results)}  ({results['seconds']} s in all)")
    return 1 if "failed" in results.get("http", {}) else 0


def _ratio(results: dict) -> dict:
    """The HTTP rates against the raw insert rate measured just before them, and what the
    counted operations would allow if each cost one raw insert (a storage-bound ceiling)."""
    raw = results["baseline"]["inserts_per_s"]
    ops = results["operations"]
    per_task = ops["total_per_task"]
    out = {"storage_bound_tasks_per_s": round(raw / per_task, 1),
           "storage_bound_create_tasks_per_s": round(raw / ops["steps"]["createTaskGraph"]["per_task"], 1)}
    http = results.get("http", {})
    if "rates" not in http:
        return out
    overall, created = http["rates"]["tasks_per_s_overall"], http["rates"]["created_per_s"]
    fan_out = http["parts"]["fan_out"]["tasks_per_s"]
    out.update({
        "tasks_per_raw_insert": round(overall / raw, 4),
        "raw_inserts_per_task": round(raw / overall, 1),
        "time_per_counted_operation_in_raw_inserts": round(raw / overall / per_task, 2),
        "raw_inserts_per_created_task": round(raw / created, 1),
        "create_time_per_counted_operation_in_raw_inserts":
            round(raw / created / ops["steps"]["createTaskGraph"]["per_task"], 2),
        "raw_inserts_per_fan_out_task": round(raw / fan_out, 1),
    })
    return out


def _rows(results: dict) -> list[tuple[str, str]]:
    return [*baseline_rows(results), *_http_rows(results), *_ratio_rows(results), *_operation_rows(results)]


def _http_rows(results: dict) -> list[tuple[str, str]]:
    http = results.get("http")
    if http is None:
        return [("2. task graph over HTTP: skipped (--skip-http)", "")]
    title = (f"2. task graph over HTTP: {http['tasks']} tasks ({http['children']} fan-out children, "
             f"fan-in, chain of {http['chain']}), {http['edges']} edges, {http['workers']} workers "
             f"(<= {http['claim_batch']} tasks per claimWork)")
    if "failed" in http:
        return [(title, ""), ("FAILED", http["failed"]), *_host_error_rows(http)]
    seconds, rates, part = http["seconds"], http["rates"], http["parts"]
    drained = seconds["events_drained_after_last_completion"]
    chain = part["chain"]
    return [
        (title, ""),
        ("create (one PUT)", f"{seconds['create_put']:8.2f} s   ({rates['created_per_s']} tasks/s, "
                             f"{http['request_bytes'] / 1e6:.1f} MB request, {len(http['put']['attempts'])} "
                             f"attempt{'s' if len(http['put']['attempts']) > 1 else ''})"),
        ("full resolution after the PUT", f"{seconds['run_after_put']:8.2f} s   (to the last completion; "
                                          f"{rates['completed_per_s_after_put']} tasks/s)"),
        ("PUT to full resolution", f"{seconds['total_put_to_last_completion']:8.2f} s   "
                                   f"({rates['tasks_per_s_overall']} tasks/s overall)"),
        ("status 'finished' seen", f"{seconds['finished_seen_after_last_completion']:8.2f} s after the last "
                                   f"completion (polled every {STATUS_POLL:g} s)"),
        ("root completed", f"{part['root']['completed_after_put_s']:8.2f} s after the PUT answered"),
        ("fan-out", f"{part['fan_out']['seconds']:8.2f} s   ({part['fan_out']['tasks']} children, "
                    f"{part['fan_out']['tasks_per_s']} tasks/s; first child "
                    f"{part['fan_out']['first_child_after_root_s']} s after the root)"),
        ("fan-in", f"{part['fan_in']['completed_after_last_child_s']:8.2f} s   from the last child to the "
                   f"fan-in task's completion ({part['fan_in']['requirements']} requirements)"),
        ("chain", f"{chain['seconds']:8.2f} s   ({chain['tasks']} links, {chain['seconds_per_link']} s per link, "
                  f"{chain['tasks_per_s']} tasks/s)" if chain["tasks"] else "-"),
        *[(f"{call} latency", latency_text(http["latency"][call])) for call in ("claimWork", "reportCompleted")],
        ("tasks per claimWork answer", ", ".join(f"{k}: {v}x" for k, v in http["tasks_per_claimWork"].items())),
        ("inspect after finished", f"{seconds['inspect']:8.2f} s   (every task 'completed', each exactly once)"),
        ("host's events drained", f"{drained} s after the last completion" if drained is not None
         else f"NOT drained; left: {http['events_left_undrained']}"),
        *_host_error_rows(http),
    ]


def _host_error_rows(http: dict) -> list[tuple[str, str]]:
    errors = http.get("host_errors", {})
    rows = [("host answers 5xx (retried)", ", ".join(f"{k}: {v}x" for k, v in errors.get("http_5xx", {}).items())
             or "none")]
    if errors.get("claims_expired"):
        rows.append(("claims expired", f"{errors['claims_expired']} (after TASK_CLAIM_TIMEOUT "
                                       f"{SETTINGS['TASK_CLAIM_TIMEOUT']} s; their tasks then ran again)"))
    if errors.get("logged"):
        rows.append(("host log errors/warnings", ", ".join(f"{k}: {v}x" for k, v in errors["logged"].items())))
    if "host_log" in http:
        rows.append(("host log kept", http["host_log"]))
    return rows


def _ratio_rows(results: dict) -> list[tuple[str, str]]:
    ratio = results["ratio"]
    if "tasks_per_raw_insert" not in ratio:
        return []
    return [
        ("3. ratio to the raw storage baseline", ""),
        ("tasks/s overall / raw inserts/s", f"{ratio['tasks_per_raw_insert']:8.4f}"),
        ("raw-insert-equivalents per task", f"{ratio['raw_inserts_per_task']:8.1f}   (overall, PUT to last completion)"),
        ("  ... per created task (the PUT)", f"{ratio['raw_inserts_per_created_task']:8.1f}"),
        ("  ... per fan-out task", f"{ratio['raw_inserts_per_fan_out_task']:8.1f}"),
    ]


def _operation_rows(results: dict) -> list[tuple[str, str]]:
    ops, ratio = results["operations"], results["ratio"]
    rows = [(f"4. storage operations: counted in-process over a graph of {ops['tasks']} tasks "
             f"({ops['edges']} edges, {ops['rounds']} claim rounds), one thread, <= {ops['claim_batch']} tasks "
             f"per claimWork", "")]
    for index, (name, step) in enumerate(ops["steps"].items()):
        label = name if index < 3 else f"{name} (host, background)"
        rows.append((label, f"{step['per_task']:8.2f} ops/task  {step['per_edge']:6.2f} ops/edge   "
                            f"({step['operations']} in {step['calls']} calls)"))
        if index == 2:
            rows.append(("API total", f"{ops['api_per_task']:8.2f} ops/task"))
    rows.append(("total", f"{ops['total_per_task']:8.2f} ops/task  {ops['total_per_edge']:6.2f} ops/edge   "
                          f"({ops['total']} operations)"))
    for name, read in ops["reads"].items():
        rows.append((f"{name} (one call, not in the total)", f"{read['operations']:8d} ops"))
    rows.append(("ceiling if each op cost one raw insert", f"{ratio['storage_bound_tasks_per_s']:8.1f} tasks/s "
                                                           f"(creation alone: {ratio['storage_bound_create_tasks_per_s']})"))
    if "time_per_counted_operation_in_raw_inserts" in ratio:
        rows.append(("measured time per counted op", f"{ratio['time_per_counted_operation_in_raw_inserts']:8.2f} "
                                                      "raw inserts overall; "
                                                      f"{ratio['create_time_per_counted_operation_in_raw_inserts']} "
                                                      "in the PUT"))
    rows.append(("operations by kind, per task", ""))
    for name, step in ops["steps"].items():
        kinds = ", ".join(f"{kind} {number:g}" for kind, number in step["by_kind_per_task"].items())
        rows.append((name, kinds or "-"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
