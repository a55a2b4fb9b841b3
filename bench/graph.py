"""A task graph of N tasks, created in one request (more than 10,000: a PUT and then
extensions of 10,000 each) and run to completion, beside the storage it is made of.

    python -m bench.graph [--tasks N] [--workers W] [--throttle SCALE]

The graph (default N = 10,000) has three parts, each testing something else:
- fan-out: one root task required by about 95% of the tasks (one resolution that
  schedules thousands of dependents);
- fan-in: one task requiring every child (a task with thousands of requirements; beyond
  10,000 children, requiring sub-fan-ins of 10,000 at most each);
- chain: the last 5% of the tasks, each requiring the previous one (sequential latency: each
  link is a completion, a 'task resolved' event and a claim, one after another).

One Azurite (in memory, free ports) serves every measurement:
1. the raw storage baseline (single-entity inserts and point reads), the yardstick;
2. the graph over HTTP against the real local host: one PUT to the scheduler API with raw
   `requests` (and the extensions, each once the graph is no longer 'creating', while the
   workers run), then W no-op workers (each its own official taskcluster client) loop
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
import sys
import time
import uuid
from typing import Callable
from pathlib import Path

import requests
import taskcluster

from devhost.azurite import Azurite
from shared.domain.ids import new_slugid
from tests.conftest import Server

from bench import graphs
from bench import http_lifecycles
from bench import local_host
from bench import storage_baseline
from bench import throttled
from bench.graphs import (CLIENT_RETRIES, SETTINGS, batching, batching_text, edges, failed, graph_request,
                     host, host_rows, inspected_labels, part_figures, parts, put_graph, requests_of, shape,
                     signed_session, watched)
from bench.lifecycle import latency_text, run
from bench.memory import CpuClock, per_task_ms, per_task_text
from bench.operation_counts import RESOLVED, InProcess, Step, expect, in_process
from bench.report import percentiles, progress

CLAIM_BATCH = 32          # the most claimWork hands out in one answer
STATUS_POLL = 1.0         # seconds between GET .../status while the graph runs
PROGRESS_EVERY = 10.0     # seconds between progress lines
STATUS_FAILURES = 5       # consecutive failed status polls before the run fails


# -- 2. over HTTP -------------------------------------------------------------------------

def measure_http(azurite: Azurite, n: int, workers: int, bound: float, log_dir: Path,
                 throttle: float | None = None, heat: bool = False) -> dict:
    out: dict = {}
    with throttled.storage(azurite, throttle, heat) as (_, proxy), host(azurite, log_dir, "graph", out, proxy) as server:
        if proxy:
            proxy.reset()   # the run's figures, not the host's start and warm-up
        out.update(_measure_http(server, n, workers, bound, CpuClock(watched(server, azurite, proxy))))
        if proxy:
            out["throttling"] = throttled.figures(proxy, tasks=n)
    return out


def _measure_http(server: Server, n: int, workers: int, bound: float, clock: CpuClock) -> dict:
    graph_id = taskcluster.slugId()
    requires = shape(n)
    task_queue_id = f"bench-{uuid.uuid4().hex[:8]}/graph"
    def body(part: dict) -> bytes:   # made when sent: a task's `created` may be at most 15 minutes old
        return json.dumps(graph_request(part, task_queue_id, graph_id)).encode()
    requests_made = requests_of(requires)
    bodies = [body(part) for part in requests_made]
    base = f"{server.root_url}/api/scheduler/v1/task-graph/{graph_id}"
    out = {"tasks": n, "edges": edges(requires), "children": len(parts(requires)["children"]),
           "chain": len(parts(requires)["chain"]), "workers": workers, "claim_batch": CLAIM_BATCH,
           "request_bytes": sum(map(len, bodies)), "requests": len(bodies), "bound_s": bound,
           "server_settings": SETTINGS, "worker_client_max_retries": CLIENT_RETRIES, "taskGraphId": graph_id}
    session = signed_session(server)

    progress(f"PUT task-graph {graph_id}: {n} tasks, {out['edges']} edges, {out['request_bytes'] / 1e6:.1f} MB "
             f"of JSON" + (f" in a PUT and {len(bodies) - 1} extensions" if len(bodies) > 1 else ""))
    clock.lap()
    put_started = time.perf_counter()
    answer, attempts = put_graph(session, base, bodies[0], bound)
    put_answered = time.perf_counter()
    out["put"] = {"attempts": attempts, "seconds": round(put_answered - put_started, 3)}
    if answer is None or answer.status_code != 200:
        return failed(out, server, f"PUT failed after {out['put']['seconds']} s: {attempts[-1]}"
                                   + (f" {answer.text[:2000]}" if answer is not None else ""))
    progress(f"created in {put_answered - put_started:.2f} s ({len(requests_of(requires)[0]) / (put_answered - put_started):.1f} tasks/s); "
             f"graph {answer.json()['status']['state']}; {workers} workers claim (<= {CLAIM_BATCH}) and complete")

    log = http_lifecycles.WorkLog(target=n, claim_batch=CLAIM_BATCH)
    threads = http_lifecycles.start_workers(server, task_queue_id, workers, log, maxRetries=CLIENT_RETRIES)
    try:
        out["extensions"], failure = _extend(session, base, [lambda part=part: body(part) for part in requests_made[1:]],
                                             log, put_started, bound)
        if failure is None:
            _, _, failure = _until_finished(session, base, log, put_answered, bound, until=("running", "finished"))
        if failure is None:
            created = _lap(clock, log, put_started)
            finished_seen, polls, failure = _until_finished(session, base, log, put_answered, bound)
            out["status_polls"] = polls
            out["cpu"] = _cpu_figures(created, _lap(clock, log, put_started), n)
    finally:
        http_lifecycles.stop_workers(threads, log)
    if failure is None and log.errors:
        failure = f"{len(log.errors)} worker calls failed; first: {log.errors[0]!r}"
    if failure is not None:
        with log.lock:
            out["completed_before_failure"] = sum(log.completed.values())
        return failed(out, server, failure)

    last = max(log.completion_times)
    progress(f"finished: last completion {last - put_answered:.1f} s after the PUT answered; "
             f"status 'finished' seen {finished_seen - last:.1f} s later. GET .../inspect to check")
    inspect_started = time.perf_counter()
    labels, failure = inspected_labels(session, base, log, n)
    inspect_seconds = time.perf_counter() - inspect_started
    if failure is not None:
        return failed(out, server, failure)
    settled, left = local_host.settle(server, last)
    progress(f"inspect: {inspect_seconds:.1f} s for {n} tasks; host's event queues "
             + (f"drained {settled:.1f} s after the last completion" if left is None else f"NOT drained: {left}"))

    by_label = {labels[task_id]: at for task_id, at in log.completed_at.items()}
    out.update(_timings(requires, by_label, put_started, put_answered, last, finished_seen))
    out["rates"]["created_per_s"] = round(len(requests_of(requires)[0]) / (put_answered - put_started), 1)
    out["seconds"]["inspect"] = round(inspect_seconds, 3)
    out["seconds"]["events_drained_after_last_completion"] = None if left else round(settled, 2)
    out["events_left_undrained"] = left
    out["latency"] = {"claimWork": percentiles(log.claim_seconds), "reportCompleted": percentiles(log.complete_seconds)}
    out["tasks_per_claimWork"] = dict(sorted(log.claimed_per_call.items()))
    out["claim_batching_in_fan_out"] = batching(log, {t for t, label in labels.items() if label.startswith("child-")})
    return out


def _lap(clock: CpuClock, log, started: float) -> dict:
    """The CPU seconds of every process since the last lap, and the completions so far."""
    spent = clock.lap()
    with log.lock:
        completed = sum(log.completed.values())
    return {"ended_after_put_s": round(time.perf_counter() - started, 1), "completed_so_far": completed, "cpu_s": spent}


def _cpu_figures(created: dict, after: dict, n: int) -> dict:
    """CPU per task while the graph's tasks were being created (per task created: tasks also
    ran meanwhile), and after every task existed (per task completed then)."""
    completed_after = after["completed_so_far"] - created["completed_so_far"]
    return {"while_created": {**created, "ms_per_task_created": per_task_ms(created["cpu_s"], n)},
            "after": {**after, "completed": completed_after,
                      "ms_per_task_completed": per_task_ms(after["cpu_s"], completed_after)}}


def _extend(session: requests.Session, base: str, bodies: list[Callable[[], bytes]], log, started: float,
            bound: float) -> tuple[list[dict], str | None]:
    """Send each extension once the graph is no longer 'creating' (an extension waits for the
    graph's tasks to exist), while the workers run; each one's timings, and why it failed (or None)."""
    extensions = []
    for number, body in enumerate(bodies, 1):
        waited = time.perf_counter()
        _, _, failure = _until_finished(session, base, log, started, bound, until=("running", "finished"))
        if failure is not None:
            return extensions, f"before extension {number}: {failure}"
        began = time.perf_counter()
        answer, attempts = put_graph(session, f"{base}/extend", body(), bound, method="POST")
        answered = time.perf_counter()
        extensions.append({"waited_for_creation_s": round(began - waited, 3), "seconds": round(answered - began, 3),
                           "attempts": attempts, "answered_after_put_s": round(answered - started, 3)})
        if answer is None or answer.status_code != 200:
            return extensions, (f"extension {number} failed after {answered - began:.1f} s: {attempts[-1]}"
                                + (f" {answer.text[:2000]}" if answer is not None else ""))
        with log.lock:
            completed = sum(log.completed.values())
        progress(f"extension {number}/{len(bodies)}: {answered - began:.1f} s (after {began - waited:.1f} s waiting "
                 f"for the graph's creation); {completed} tasks completed so far")
    return extensions, None


def _until_finished(session: requests.Session, base: str, log, started: float, bound: float,
                    until: tuple[str, ...] = ("finished",)) -> tuple[float, int, str | None]:
    """Poll GET .../status until its state is one of `until`; (when it was seen, polls, why it
    failed or None)."""
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
        if state in until:
            return time.perf_counter(), polls, None
        with log.lock:
            completed, errors = sum(log.completed.values()), len(log.errors)
        if errors:
            return time.perf_counter(), polls, f"{errors} worker calls failed; first: {log.errors[0]!r}"
        if state not in ("running", "creating"):   # a large graph's tasks may still be being created
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
    n = len(requires)
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
        "parts": part_figures(requires, at, put_answered),
    }


# -- 4. operations, counted in-process ------------------------------------------------------

STEPS = ("createTaskGraph", "claimWork", "reportCompleted", "task-resolved event", "repair sweep")
READS = ("getTaskGraphStatus", "inspectTaskGraph")


def count_operations(connection: str, n: int) -> dict:
    """Storage operations of a graph of `n` tasks, the same shape, run step by step in this
    process from one thread: each step's delta is its own cost, uncontended."""
    with in_process(connection) as harness:
        # A small graph first: every table and queue then exists and nothing first-time is counted.
        _run_counted(harness, 4, {name: Step(name) for name in STEPS + READS})
        progress(f"counting storage operations over a graph of {n} tasks in-process (one thread, "
                 f"<= {CLAIM_BATCH} tasks per claimWork)")
        steps = {name: Step(name) for name in STEPS + READS}
        rounds = _run_counted(harness, n, steps)
    return _operation_summary(steps, n, edges(shape(n)), rounds)


def _run_counted(harness: InProcess, n: int, steps: dict[str, Step]) -> int:
    """Create the graph, then rounds of: claim all that is pending, complete it (which handles
    its resolution), deliver the 'task resolved' events of long fan-outs; the repair sweep at
    the end."""
    services = harness.services
    graph_id = new_slugid()
    task_queue_id = f"bench-{harness.prefix}/graph"
    create, claim, complete, events = (steps[name] for name in STEPS[:4])
    with harness.step(create):
        services.task_graphs.create(graph_id, graph_request(shape(n), task_queue_id, graph_id))
        create.calls += 1
        harness.deliver()  # whatever creation left to a queue trigger (nothing has resolved yet)
    rounds = resolved = 0
    while True:
        with harness.step(claim):
            claimed = _claim_pending(services, task_queue_id, claim)
        if not claimed:
            break
        rounds += 1
        with harness.step(complete):
            for task_id, run_id in claimed:
                services.resolutions.completed(task_id, run_id)
                complete.calls += 1
            # The graph's and group's counts, finished after each call answered, are its work.
            expect(services.dependency_resolver.settled(), "resolutions still unfinished after 30 s")
        with harness.step(events):
            events.calls += harness.deliver()[RESOLVED]
        resolved += len(claimed)
    expect(resolved == n, f"{resolved} of {n} tasks were claimed before nothing was pending")
    # A resolution is handled by the call that resolved it (counted in reportCompleted), but
    # for a fan-out of a page of dependents or more, which is announced as an event.
    expect(events.calls <= n, f"{events.calls} 'task resolved' events for {n} resolutions")
    with harness.step(steps["getTaskGraphStatus"]):
        state = services.task_graphs.status(graph_id)["status"]["state"]
        steps["getTaskGraphStatus"].calls += 1
    expect(state == "finished", f"the graph is {state} after all its tasks completed")
    harness.sweep_repairs(steps["repair sweep"], n)
    with harness.step(steps["inspectTaskGraph"]):
        inspected = services.task_graphs.inspect(graph_id)
        steps["inspectTaskGraph"].calls += 1
    expect(len(inspected["tasks"]) == n and all(t["state"] == "completed" for t in inspected["tasks"]),
           "inspect does not show every task completed")
    return rounds


def _claim_pending(services, task_queue_id: str, step: Step) -> list[tuple[str, int]]:
    """Claim until an answer is not full: everything pending now (one thread, no contention)."""
    claimed: list[tuple[str, int]] = []
    while True:
        answer = services.work_claimer.claim_work(task_queue_id, "bench", "counter", CLAIM_BATCH)["tasks"]
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
    graphs.add_arguments(parser, "the PUT")
    parser.add_argument("--count", type=int, default=500, help="tasks of the graph whose storage operations are "
                                                               "counted in-process (default 500)")
    storage_baseline.add_arguments(parser)
    parser.add_argument("--skip-http", action="store_true", help="leave out the HTTP run (no local host needed)")
    throttled.add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    bound = graphs.bound(args, args.tasks)

    def measure(azurite: Azurite, scratch: Path) -> dict:
        out = {}
        if not args.skip_http:
            out["http"] = measure_http(azurite, args.tasks, args.workers, bound, scratch, args.throttle, args.heat)
        out["operations"] = count_operations(azurite.connection_string, args.count)
        return out

    return run("graph", args, measure, _ratio, _rows)


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
    return [*_http_rows(results), *_ratio_rows(results), *_operation_rows(results)]


def _http_rows(results: dict) -> list[tuple[str, str]]:
    http = results.get("http")
    if http is None:
        return [("2. task graph over HTTP: skipped (--skip-http)", "")]
    title = (f"2. task graph over HTTP: {http['tasks']} tasks ({http['children']} fan-out children, "
             f"fan-in, chain of {http['chain']}), {http['edges']} edges, {http['workers']} workers "
             f"(<= {http['claim_batch']} tasks per claimWork)")
    if "failed" in http:
        return [(title, ""), ("FAILED", http["failed"]), *host_rows(http), *throttled.rows(http.get("throttling"))]
    seconds, rates, part = http["seconds"], http["rates"], http["parts"]
    drained = seconds["events_drained_after_last_completion"]
    chain = part["chain"]
    return [
        (title, ""),
        ("create (the PUT)" if http.get("requests", 1) > 1 else "create (one PUT)", f"{seconds['create_put']:8.2f} s   ({rates['created_per_s']} tasks/s, "
                             f"{http['request_bytes'] / 1e6:.1f} MB request, {len(http['put']['attempts'])} "
                             f"attempt{'s' if len(http['put']['attempts']) > 1 else ''})"),
        *_extension_rows(http),
        ("full resolution after the PUT", f"{seconds['run_after_put']:8.2f} s   (to the last completion; "
                                          f"{rates['completed_per_s_after_put']} tasks/s)"),
        ("PUT to full resolution", f"{seconds['total_put_to_last_completion']:8.2f} s   "
                                   f"({rates['tasks_per_s_overall']} tasks/s overall)"),
        ("status 'finished' seen", f"{seconds['finished_seen_after_last_completion']:8.2f} s after the last "
                                   f"completion (polled every {STATUS_POLL:g} s)"),
        ("root completed", f"{part['root']['completed_after_creation_s']:8.2f} s after the PUT answered"),
        ("fan-out", f"{part['fan_out']['seconds']:8.2f} s   ({part['fan_out']['tasks']} children, "
                    f"{part['fan_out']['tasks_per_s']} tasks/s; first child "
                    f"{part['fan_out']['first_child_after_root_s']} s after the root)"),
        ("fan-in", f"{part['fan_in']['completed_after_last_child_s']:8.2f} s   from the last child to the "
                   f"fan-in task's completion ({part['fan_in']['requirements']} requirements"
                   + (", each a sub-fan-in of a slice of the children)" if part["fan_in"].get("sub_fan_ins") else ")")),
        ("chain", f"{chain['seconds']:8.2f} s   ({chain['tasks']} links, {chain['seconds_per_link']} s per link, "
                  f"{chain['tasks_per_s']} tasks/s)" if chain["tasks"] else "-"),
        *[(f"{call} latency", latency_text(http["latency"][call])) for call in ("claimWork", "reportCompleted")],
        ("tasks per claimWork answer", ", ".join(f"{k}: {v}x" for k, v in http["tasks_per_claimWork"].items())),
        ("  ... mean while children pending", batching_text(http.get("claim_batching_in_fan_out", {}))),
        *_cpu_rows(http.get("cpu")),
        ("inspect after finished", f"{seconds['inspect']:8.2f} s   (every task 'completed', each exactly once)"),
        ("host's events drained", f"{drained} s after the last completion" if drained is not None
         else f"NOT drained; left: {http['events_left_undrained']}"),
        *host_rows(http),
        *throttled.rows(http.get("throttling")),
    ]


def _cpu_rows(cpu: dict | None) -> list[tuple[str, str]]:
    if not cpu:
        return []
    created, after = cpu["while_created"], cpu["after"]
    return [("CPU ms a task, while created", f"{per_task_text(created['ms_per_task_created'])}   (to "
                                             f"{created['ended_after_put_s']} s; {created['completed_so_far']} "
                                             f"completed meanwhile)"),
            ("CPU ms a task completed after", f"{per_task_text(after['ms_per_task_completed'])}   "
                                              f"({after['completed']} completed)")]


def _extension_rows(http: dict) -> list[tuple[str, str]]:
    """Each extension of a graph larger than one request: its time, and when it was answered."""
    rows = []
    for number, extension in enumerate(http.get("extensions", []), 1):
        rows.append((f"  extension {number}", f"{extension['seconds']:8.2f} s   (answered "
                                               f"{extension['answered_after_put_s']:.1f} s after the PUT began; "
                                               f"waited {extension['waited_for_creation_s']:.1f} s for 'running')"))
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
