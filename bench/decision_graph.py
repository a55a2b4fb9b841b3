"""A task graph made by parallel createTask callers, as a decision task makes one, then run
to completion by no-op workers.

    python -m bench.decision_graph [--children N] [--creators C] [--workers W] [--skip-put]

The graph: a root, a fan-out of N children (default 1,000) requiring the root, and a
fan-in requiring every child. In one Azurite (in memory, free ports):
1. the raw storage baseline (single-entity inserts and point reads), the yardstick;
2. the graph made by C threads (default 16), each with its own official taskcluster
   client, calling createTask with dependencies by taskId: the root first, then the
   children, then the fan-in, whose createTask carries all N dependencies; then W no-op
   workers (default 8), each its own client, loop claimWork (tasks: 4) -> reportCompleted
   until every task is completed, exactly once, none before its dependencies;
3. the same graph made by one PUT to the scheduler API (`bench.graph`'s request), run the
   same way, for comparison (--skip-put leaves it out);
then the baseline once more, as a drift check. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

import taskcluster

from devhost.azurite import Azurite
from tests.conftest import Server

from bench import against as other_queues
from bench import graphs
from bench import http_lifecycles
from bench import storage_baseline
from bench import throttled
from bench.graphs import (CLIENT_RETRIES, FAN_IN, ROOT, batching, batching_text, failed, graph_request, host,
                     host_rows, inspected_labels, node_task, part_figures, put_graph, shape, signed_session)
from bench.lifecycle import latency_text, run
from bench.report import percentiles, progress

CLAIM_BATCH = 4
MAX_DEPENDENCIES = 10_000   # Taskcluster's limit on one task's dependencies: the fan-in has them all
VARIANTS = {"createTask": "createTask calls from parallel callers", "put": "one scheduler-API PUT"}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.decision_graph", description=__doc__.split("\n")[0])
    parser.add_argument("--children", type=int, default=1000, help="tasks in the fan-out, each requiring the "
                                                                   "root (default 1,000; at most 10,000, the most "
                                                                   "dependencies one task may have)")
    parser.add_argument("--creators", type=int, default=16, help="parallel createTask callers (default 16)")
    graphs.add_arguments(parser, "creation")
    storage_baseline.add_arguments(parser)
    throttled.add_arguments(parser)
    parser.add_argument("--skip-put", action="store_true", help="leave out the same graph made by one PUT")
    other_queues.add_argument(parser)
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --against: graphs by createTask calls on each queue, alternating (default 1)")
    args = parser.parse_args(argv)
    if not 2 <= args.children <= MAX_DEPENDENCIES:
        parser.error(f"--children must be between 2 and {MAX_DEPENDENCIES:,}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    requires = shape(args.children + 2, chain_share=0)
    bound = graphs.bound(args, len(requires))

    def measure(azurite: Azurite, scratch: Path) -> dict:
        out: dict = {}
        with throttled.storage(azurite, args.throttle, args.heat) as (_, proxy), \
                host(azurite, scratch, "decision-graph", out, proxy) as server:
            for how in ("createTask", *(() if args.skip_put else ("put",))):
                if proxy:
                    proxy.reset()   # each way's own figures
                out[how] = _variant(server, requires, args, bound, how)
                if proxy:
                    out[how]["throttling"] = throttled.figures(proxy, tasks=len(requires))
            if args.against:
                out["against"] = _against(server, other_queues.OtherQueue(args.against), requires, args, bound,
                                          out["createTask"], out.get("put"))
            failures = [how for how in VARIANTS if "failed" in out.get(how, {})]
            if failures:
                out["failed"] = f"the graph made by {' and '.join(failures)} failed"
        return {"http": out}

    return run("decision_graph", args, measure, _ratio, _rows, _headline)


def _variant(server: Server, requires: dict[str, list[str]], args: argparse.Namespace, bound: float,
             how: str) -> dict:
    """The graph made one way (`how`), then run to completion; its figures, or why it failed."""
    n = len(requires)
    group_id = taskcluster.slugId()
    task_queue_id = f"bench-{uuid.uuid4().hex[:8]}/decision"
    out = {"how": VARIANTS[how], "tasks": n, "children": n - 2, "workers": args.workers, "claim_batch": CLAIM_BATCH,
           "taskGroupId": group_id}
    progress(f"graph of {n} tasks by {VARIANTS[how]}")
    started = time.perf_counter()
    try:
        if how == "createTask":
            ids = {label: taskcluster.slugId() for label in requires}
            out["creators"] = args.creators
            out["latency"] = _create_by_calls(server, requires, ids, node_task(task_queue_id, group_id), args.creators)
        else:
            ids = None
            out["put"] = _create_by_put(server, requires, task_queue_id, group_id, bound)
    except (RuntimeError, taskcluster.TaskclusterFailure) as error:
        return failed(out, server, f"creation failed: {error!r}")
    created = time.perf_counter()
    progress(f"created {n} tasks in {created - started:.1f} s ({n / (created - started):.1f}/s); "
             f"{args.workers} workers claim (tasks: {CLAIM_BATCH}) and complete")

    log = http_lifecycles.WorkLog(target=n, claim_batch=CLAIM_BATCH)
    try:
        http_lifecycles.run_workers(server, task_queue_id, args.workers, log, progress, bound,
                                    maxRetries=CLIENT_RETRIES)
    except RuntimeError as error:
        with log.lock:
            out["completed_before_failure"] = sum(log.completed.values())
        return failed(out, server, str(error))
    last = max(log.completion_times)
    if ids is None:
        labels, failure = inspected_labels(signed_session(server), _graph_url(server, group_id), log, n)
        ids = {label: task_id for task_id, label in labels.items()}
    else:
        failure = _checked(log, ids)
    failure = failure or _in_order(log, ids, requires)
    if failure is None:
        failure, problem = _group_listing(server, group_id, n)
        if problem is not None:
            progress(f"API PROBLEM: {problem}")
            out["api_problem"] = problem
    if failure is not None:
        return failed(out, server, failure)

    by_label = {label: log.completed_at[task_id] for label, task_id in ids.items()}
    out["seconds"] = {"create": round(created - started, 3), "run_first_claim_to_last_completion":
                      round(last - log.first_claim, 3), "end_to_end": round(last - started, 3)}
    out["rates"] = {"created_per_s": round(n / (created - started), 1),
                    "run_tasks_per_s": round(n / (last - log.first_claim), 1),
                    "end_to_end_tasks_per_s": round(n / (last - started), 1)}
    out.setdefault("latency", {}).update(claimWork=percentiles(log.claim_seconds),
                                         reportCompleted=percentiles(log.complete_seconds))
    out["tasks_per_claimWork"] = dict(sorted(log.claimed_per_call.items()))
    out["claim_batching_in_fan_out"] = batching(log, {ids[label] for label in requires if label.startswith("child-")})
    out["parts"] = part_figures(requires, by_label, created)
    progress(f"run: {out['seconds']['run_first_claim_to_last_completion']} s from the first claim to the last "
             f"completion; every task completed once, none before its dependencies")
    return out


def _against(server: Server, other: other_queues.OtherQueue, requires: dict[str, list[str]],
             args: argparse.Namespace, bound: float, first: dict, put: dict | None) -> dict:
    """The graph by createTask calls on the other queue and on ours, in `args.rounds`
    alternating rounds (ours already made one: `first`); both rates of each, and the ratios of
    their creation and end-to-end rates; and, if ours was made by one PUT too (`put`), its
    end-to-end rate against theirs by createTask calls (Taskcluster has no such PUT)."""
    ours, theirs = [first], []
    for round_number in range(1, args.rounds + 1):
        progress(f"round {round_number}/{args.rounds} against {other.root_url}")
        theirs.append(_variant(other, requires, args, bound, "createTask"))
        if round_number < args.rounds:
            ours.append(_variant(server, requires, args, bound, "createTask"))
    runs = [run for run in ours + theirs if "failed" in run]
    if runs:
        return {"root_url": other.root_url, "failed": runs[0]["failed"]}
    out = {"root_url": other.root_url}
    for name, rate in (("created_per_s", "created"), ("end_to_end_tasks_per_s", "end_to_end")):
        mine, others = [run["rates"][name] for run in ours], [run["rates"][name] for run in theirs]
        out[rate] = {"ours": mine, "theirs": others, "ratio": round(sum(mine) / sum(others), 2)}
    if put is not None and "rates" in put:
        others = out["end_to_end"]["theirs"]
        out["put_end_to_end"] = {"ours": [put["rates"]["end_to_end_tasks_per_s"]], "theirs": others,
                                 "ratio": round(put["rates"]["end_to_end_tasks_per_s"] / (sum(others) / len(others)), 2)}
    out["run_tasks_per_s"] = {"ours": [run["rates"]["run_tasks_per_s"] for run in ours],
                              "theirs": [run["rates"]["run_tasks_per_s"] for run in theirs]}
    out["createTask children latency"] = {"ours": ours[-1]["latency"]["createTask children"],
                                          "theirs": theirs[-1]["latency"]["createTask children"]}
    return out


def _create_by_calls(server: Server, requires: dict[str, list[str]], ids: dict[str, str], task: dict,
                     creators: int) -> dict:
    """The root, then the children from `creators` threads, then the fan-in; the latency
    of each kind of call."""
    def definitions(labels: list[str]) -> dict[str, dict]:
        return {ids[label]: {**task, "dependencies": [ids[required] for required in requires[label]]}
                for label in labels}

    def one(label: str) -> list[float]:
        return http_lifecycles.create_all(server, definitions([label]), 1, progress, maxRetries=CLIENT_RETRIES)

    root = one(ROOT)
    children = [label for label in requires if label not in (ROOT, FAN_IN)]
    progress(f"  root created; {len(children)} children from {creators} threads")
    child_seconds = http_lifecycles.create_all(server, definitions(children), creators, progress,
                                               maxRetries=CLIENT_RETRIES)
    progress(f"  children created; the fan-in's createTask with {len(requires[FAN_IN])} dependencies")
    fan_in = one(FAN_IN)
    return {"createTask root": percentiles(root), "createTask children": percentiles(child_seconds),
            "createTask fan-in": percentiles(fan_in)}


def _create_by_put(server: Server, requires: dict[str, list[str]], task_queue_id: str, group_id: str,
                   bound: float) -> dict:
    body = json.dumps(graph_request(requires, task_queue_id, group_id)).encode()
    progress(f"  PUT task-graph {group_id}: {len(body) / 1e6:.1f} MB of JSON")
    answer, attempts = put_graph(signed_session(server), _graph_url(server, group_id), body, bound)
    if answer is None or answer.status_code != 200:
        raise RuntimeError(f"PUT failed: {attempts[-1]}" + (f" {answer.text[:2000]}" if answer is not None else ""))
    return {"attempts": attempts}


def _graph_url(server: Server, graph_id: str) -> str:
    return f"{server.root_url}/api/scheduler/v1/task-graph/{graph_id}"


def _checked(log: http_lifecycles.WorkLog, ids: dict[str, str]) -> str | None:
    try:
        http_lifecycles.check(log, list(ids.values()))
    except RuntimeError as wrong:
        return str(wrong)
    return None


def _in_order(log: http_lifecycles.WorkLog, ids: dict[str, str], requires: dict[str, list[str]]) -> str | None:
    """No task was handed out before every task it requires had been reported completed (the
    report's answer comes after its dependents are scheduled, so it is not the yardstick)."""
    claimed_at = {task_id: answered for answered, task_ids in log.answers for task_id in task_ids}
    early = [label for label, required in requires.items() if required and
             claimed_at[ids[label]] < max(log.reported_at[ids[r]] for r in required)]
    return f"{len(early)} tasks were claimed before their dependencies completed, e.g. {early[:3]}" if early else None


def _group_listing(server: Server, group_id: str, n: int) -> tuple[str | None, str | None]:
    """listTaskGroup, page by page: every task listed must be completed, in one run (else
    the run failed: the first answer). A listing short of tasks the workers saw completed
    is a problem of listTaskGroup, not of the run: the second answer says so."""
    client = server.client(maxRetries=CLIENT_RETRIES)
    tasks, query = [], {}
    while True:
        page = client.listTaskGroup(group_id, query=query)
        tasks += page["tasks"]
        if not page.get("continuationToken"):
            break
        query = {"continuationToken": page["continuationToken"]}
    listed = {t["status"]["taskId"] for t in tasks}
    wrong = [t for t in tasks if t["status"]["state"] != "completed" or len(t["status"]["runs"]) != 1]
    if wrong or len(listed) != len(tasks) or len(listed) > n:
        return (f"listTaskGroup lists {len(tasks)} tasks ({len(listed)} different), {len(wrong)} of them "
                "not completed in exactly one run"), None
    if len(listed) < n:
        return None, (f"listTaskGroup listed {len(listed)} of the {n} tasks, and its last page had no "
                      "continuationToken")
    return None, None


def _ratio(results: dict) -> dict:
    """Raw inserts/s (the baseline before) over each variant's end-to-end tasks/s: how many
    single-entity inserts storage could have done in the time one task took."""
    raw = results["baseline"]["inserts_per_s"]
    return {how: {"raw_inserts_per_task_end_to_end": round(raw / variant["rates"]["end_to_end_tasks_per_s"], 1),
                  "raw_inserts_per_created_task": round(raw / variant["rates"]["created_per_s"], 1)}
            for how, variant in results["http"].items() if how in VARIANTS and "rates" in variant}


def _rows(results: dict) -> list[tuple[str, str]]:
    http, ratio = results["http"], results["ratio"]
    rows = []
    for number, how in enumerate((how for how in VARIANTS if how in http), start=2):
        variant = http[how]
        title = (f"{number}. a graph of {variant['tasks']} tasks (root, {variant['children']} children, fan-in) "
                 f"by {variant['how']}" + (f" ({variant['creators']} threads)" if "creators" in variant else "")
                 + f"; {variant['workers']} workers, claimWork tasks: {variant['claim_batch']}")
        if "failed" in variant:
            rows += [(title, ""), ("FAILED", variant["failed"])]
            continue
        seconds, rates, latency, part = variant["seconds"], variant["rates"], variant["latency"], variant["parts"]
        rows += [
            (title, ""),
            ("creation", f"{seconds['create']:8.2f} s   ({rates['created_per_s']} tasks/s"
                         + (f"; {len(variant['put']['attempts'])} PUT attempt(s))" if "put" in variant else ")")),
            *[(f"{call} latency", latency_text(latency[call])) for call in
              ("createTask root", "createTask children", "createTask fan-in") if call in latency],
            ("run", f"{seconds['run_first_claim_to_last_completion']:8.2f} s   (first claim to last completion; "
                    f"{rates['run_tasks_per_s']} tasks/s)"),
            ("end to end", f"{seconds['end_to_end']:8.2f} s   ({rates['end_to_end_tasks_per_s']} tasks/s; "
                           f"{ratio[how]['raw_inserts_per_task_end_to_end']} raw inserts' time per task)"),
            ("fan-out", f"{part['fan_out']['seconds']:8.2f} s   ({part['fan_out']['tasks_per_s']} tasks/s; first "
                        f"child {part['fan_out']['first_child_after_root_s']} s after the root completed)"),
            ("fan-in", f"{part['fan_in']['completed_after_last_child_s']:8.2f} s   from the last child's completion "
                       "to the fan-in's"),
            *[(f"{call} latency", latency_text(latency[call])) for call in ("claimWork", "reportCompleted")],
            ("tasks per claimWork answer", ", ".join(f"{k}: {v}x" for k, v in variant["tasks_per_claimWork"].items())),
            ("  ... mean while children pending", batching_text(variant["claim_batching_in_fan_out"])),
            *([("API PROBLEM seen", variant["api_problem"])] if "api_problem" in variant else []),
            *throttled.rows(variant.get("throttling")),
        ]
    return rows + _against_rows(http.get("against")) + host_rows(http)


def _against_rows(against: dict | None) -> list[tuple[str, str]]:
    if against is None:
        return []
    title = f"beside {against['root_url']}: the graph by createTask calls, rounds alternating"
    if "failed" in against:
        return [(title, ""), ("FAILED", against["failed"])]

    def rates(figures: dict) -> str:
        return (f"ours {', '.join(map(str, figures['ours']))}; theirs {', '.join(map(str, figures['theirs']))}"
                + (f"   ours / theirs {figures['ratio']:.2f}x" if "ratio" in figures else ""))
    latency = against["createTask children latency"]
    return [(title, ""), ("created tasks/s", rates(against["created"])),
            ("run tasks/s", rates(against["run_tasks_per_s"])),
            ("end to end tasks/s", rates(against["end_to_end"])),
            *([("ours by one PUT, end to end", rates(against["put_end_to_end"]))] if "put_end_to_end" in against
              else []),
            ("createTask children latency, ours", latency_text(latency["ours"])),
            ("createTask children latency, theirs", latency_text(latency["theirs"]))]


def _headline(results: dict) -> str:
    variant = results["http"]["createTask"]
    if "failed" in variant:
        return f"headline: the graph made by createTask calls FAILED: {variant['failed']}"
    fan_in = variant["latency"]["createTask fan-in"]["max_ms"] / 1000
    against = results["http"].get("against")
    beside = (f"; beside {against['root_url']}: creation {against['created']['ratio']:.2f}x, end to end "
              f"{against['end_to_end']['ratio']:.2f}x" + (f", by one PUT {against['put_end_to_end']['ratio']:.2f}x"
                                                          if "put_end_to_end" in against else "")
              if against and "failed" not in against else "")
    return (f"headline: {variant['tasks']} tasks by {variant['creators']} createTask callers: created in "
            f"{variant['seconds']['create']} s, run in {variant['seconds']['run_first_claim_to_last_completion']} s, "
            f"{variant['rates']['end_to_end_tasks_per_s']} tasks/s end to end; the fan-in's createTask "
            f"({variant['children']} dependencies) took {fan_in:.2f} s{beside}")


if __name__ == "__main__":
    sys.exit(main())
