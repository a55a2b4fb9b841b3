"""Sequential lifecycles through the official client, as a share of the raw storage bound.

    python -m bench.sequential [--lifecycles N]

ONE client does createTask -> claimWork (tasks: 1) -> reportCompleted, then the next task,
N times (default 200), against the real local host. Nothing overlaps, so each lifecycle
costs the sum of its calls' latencies, and the rate says how close one caller gets to what
storage allows. In one Azurite (in memory, free ports):
1. the raw storage baseline (single-entity inserts and point reads), the yardstick;
2. the sequential lifecycles over HTTP: lifecycles/s, median and p95 of each call;
3. the storage round trips per full lifecycle, counted in-process as `bench.lifecycle`
   counts them (claimWork asking for 4, every sweep's share included);
4. the bound: raw inserts/s / counted round trips per lifecycle, and the share of it the
   sequential client reached (the issue's target: at least 60%);
then the baseline once more, as a drift check. See bench/README.md.

`--against ROOT_URL` measures the same lifecycles, from the same kind of client, against
another Taskcluster-compatible queue (Taskcluster's own, say), with the credentials of
TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN, in `--rounds` alternating blocks with
ours, so that both meet the machine in the same moods; the ratio of the rates is printed.
`--warm-up N` runs N unmeasured lifecycles on each first (both were slower in their first
block).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import taskcluster

from devhost.azurite import Azurite

from bench import against as other_queues
from bench import local_host
from bench import operation_counts
from bench import storage_baseline
from bench import throttled
from bench.lifecycle import latency_text, run
from bench.report import percentiles, progress
from bench.tasks import task_definition

CALLS = ("createTask", "claimWork", "reportCompleted")
GROUPINGS = {"one_group": "all tasks in one group", "group_per_task": "each task in a group of its own"}
PROGRESS_EVERY = 5.0     # seconds between progress lines
SHARE_TARGET = 0.60      # the target share of the raw storage bound


def add_block_options(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark that runs blocks of `_lifecycles` (bench.trees, bench.table_size)."""
    parser.add_argument("--lifecycles", type=int, default=300, help="sequential lifecycles per block (default 300)")
    parser.add_argument("--group-per-task", action="store_true",
                        help="each task in a group of its own (no taskGroupId given), instead of all in one")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.sequential", description=__doc__.split("\n")[0])
    parser.add_argument("--lifecycles", type=int, default=200, help="sequential lifecycles over HTTP (default 200)")
    other_queues.add_argument(parser)
    parser.add_argument("--rounds", type=int, default=1, help="blocks of --lifecycles each, ours and theirs "
                                                              "alternating (default 1)")
    parser.add_argument("--warm-up", type=int, default=0, metavar="N",
                        help="with --against: N lifecycles on each queue first, not measured (default 0)")
    operation_counts.add_arguments(parser)
    storage_baseline.add_arguments(parser)
    throttled.add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def measure(azurite: Azurite, scratch: Path) -> dict:
        return {"http": measure_http(azurite, args.lifecycles, scratch, args.against, args.rounds, args.warm_up,
                                     args.throttle, args.heat),
                "operations": operation_counts.count(azurite.connection_string, args.count, progress,
                                                     group_per_task=args.group_per_task)}

    return run("sequential", args, measure, _bound, _rows, _headline)


def measure_http(azurite: Azurite, n: int, log_dir: Path, against: str | None = None, rounds: int = 1,
                 warm_up: int = 0, throttle: float | None = None, heat: bool = False) -> dict:
    with throttled.storage(azurite, throttle, heat) as (storage, proxy), \
            local_host.running(storage, log_dir, progress) as server:
        if proxy:
            proxy.reset()   # the run's figures, not the host's start and warm-up
        out = _measure_http(server, n, against, rounds, warm_up)
        if proxy:
            out["throttling"] = throttled.figures(proxy, tasks=(n * rounds + warm_up) * len(GROUPINGS))
        return out


def _measure_http(server, n: int, against: str | None, rounds: int, warm_up: int) -> dict:
    """Our lifecycles (and the other queue's, alternating) on the running host: in each round
    a block with every task in one group, then a block with each task in a group of its own."""
    blocks = {(queue, grouping): [] for queue in ("ours", "theirs") for grouping in GROUPINGS}
    queues = {"ours": server.client()}
    if against:
        queues["theirs"] = other_queues.OtherQueue(against).client()
    names = {"ours": "ours", "theirs": against}
    for queue, client in queues.items():   # every queue past its first-call costs alike
        if warm_up:
            _lifecycles(client, warm_up, f"warm-up (not measured), {names[queue]}")
    for round_number in range(1, rounds + 1):
        for grouping in GROUPINGS:
            for queue, client in queues.items():
                blocks[queue, grouping].append(_lifecycles(
                    client, n, f"round {round_number}/{rounds}, {names[queue]}, {GROUPINGS[grouping]}",
                    group_per_task=grouping == "group_per_task"))
    settled, left = local_host.settle(server, time.perf_counter())
    progress("the host's events " + (f"drained {settled:.1f} s after the last completion" if left is None
                                     else f"NOT drained: {left}"))
    results = {"claim_batch": 1, "server_settings": local_host.SETTINGS,
               "events_drained_after_last_completion_s": None if left else round(settled, 2),
               "events_left_undrained": left}
    for grouping in GROUPINGS:
        figures = _combined(blocks["ours", grouping])
        if against:
            figures["against"] = {"root_url": against, **_combined(blocks["theirs", grouping])}
            figures["ratio_to_against"] = round(figures["lifecycles_per_s"] / figures["against"]["lifecycles_per_s"],
                                                2)
        results[grouping] = figures
    return results


def _lifecycles(client: taskcluster.Queue, n: int, label: str, group_per_task: bool = False) -> dict:
    """`n` lifecycles one after the other: their seconds and each call's latencies. All in one
    group, like a decision task's tasks, or (`group_per_task`) each in a group of its own: no
    taskGroupId given, which makes it the taskId, as for one-off tasks and hooks' tasks. Each
    task is stamped as a client stamps it: `created` now, its deadline (and so its default
    expiry) from now."""
    queue_id, group_id = f"bench-{uuid.uuid4().hex[:8]}/sequential", taskcluster.slugId()

    def definition() -> dict:
        stamped = task_definition(queue_id, group_id)
        if group_per_task:
            del stamped["taskGroupId"]
        return stamped
    claim = {"workerGroup": "bench", "workerId": "sequential", "tasks": 1}
    seconds: dict[str, list[float]] = {call: [] for call in CALLS}

    def timed(call: str, *arguments):
        began = time.perf_counter()
        answer = getattr(client, call)(*arguments)
        seconds[call].append(time.perf_counter() - began)
        return answer

    progress(f"{label}: {n} sequential lifecycles from one client (createTask -> claimWork tasks: 1 -> "
             "reportCompleted)")
    started = last_line = time.perf_counter()
    for done in range(1, n + 1):
        task_id = taskcluster.slugId()
        timed("createTask", task_id, definition())
        claimed = timed("claimWork", queue_id, claim)["tasks"]
        if [answer["status"]["taskId"] for answer in claimed] != [task_id]:
            raise RuntimeError(f"claimWork answered {len(claimed)} tasks, not the one just created")
        state = timed("reportCompleted", task_id, str(claimed[0]["runId"]))["status"]["state"]
        if state != "completed":
            raise RuntimeError(f"task {task_id} is {state} after reportCompleted")
        now = time.perf_counter()
        if now - last_line >= PROGRESS_EVERY:
            progress(f"  {done}/{n} lifecycles ({done / (now - started):.1f}/s)")
            last_line = now
    total = time.perf_counter() - started
    progress(f"  {n} lifecycles in {total:.2f} s ({n / total:.2f}/s)")
    return {"lifecycles": n, "seconds": total, "samples": seconds}


def _combined(blocks: list[dict]) -> dict:
    """Blocks of lifecycles as one figure: their rate over all, each call's latencies over all."""
    n, total = sum(block["lifecycles"] for block in blocks), sum(block["seconds"] for block in blocks)
    return {"lifecycles": n, "seconds": round(total, 3), "lifecycles_per_s": round(n / total, 2),
            "blocks_per_s": [round(block["lifecycles"] / block["seconds"], 2) for block in blocks],
            "latency": {call: percentiles([x for block in blocks for x in block["samples"][call]]) for call in CALLS}}


def _bound(results: dict) -> dict:
    """bound = raw inserts/s (the baseline before) / counted round trips per lifecycle;
    share = lifecycles/s / bound."""
    raw = results["baseline"]["inserts_per_s"]
    trips, api = results["operations"]["total_per_lifecycle"], results["operations"]["api_per_lifecycle"]
    bound = raw / trips
    rate = _counted(results)["lifecycles_per_s"]
    return {"raw_inserts_per_s": raw, "round_trips_per_lifecycle": trips, "bound_lifecycles_per_s": round(bound, 2),
            "share_of_bound": round(rate / bound, 3), "target_share": SHARE_TARGET,
            # The client waits for its three calls only: the rest runs in the background (or
            # comes due much later), so the API's own round trips are the tighter yardstick.
            "api_round_trips_per_lifecycle": api, "api_bound_lifecycles_per_s": round(raw / api, 2),
            "share_of_api_bound": round(rate / (raw / api), 3),
            "ms_per_lifecycle": round(1000 / rate, 1), "ms_per_round_trip_at_raw_rate": round(1000 / raw, 2)}


def _counted_grouping(results: dict) -> str:
    """The grouping whose round trips were counted."""
    return "group_per_task" if results["operations"]["group_per_task"] else "one_group"


def _counted(results: dict) -> dict:
    """The HTTP figures of the grouping whose round trips were counted."""
    return results["http"][_counted_grouping(results)]


def _rows(results: dict) -> list[tuple[str, str]]:
    http, bound = results["http"], results["ratio"]
    verdict = "met" if bound["share_of_bound"] >= SHARE_TARGET else "NOT met"
    counted = GROUPINGS[_counted_grouping(results)]
    return [
        *[row for number, grouping in zip("ab", GROUPINGS) for row in _grouping_rows(http[grouping], number, grouping)],
        ("host's events drained", f"{http['events_drained_after_last_completion_s']} s after the last completion"
         if http["events_left_undrained"] is None else f"NOT drained; left: {http['events_left_undrained']}"),
        *throttled.rows(http.get("throttling")),
        *operation_counts.rows(results["operations"], 3),
        (f"4. share of the raw storage bound ({counted}, as counted)", ""),
        ("bound", f"{bound['bound_lifecycles_per_s']:8.2f} lifecycles/s   (raw inserts {bound['raw_inserts_per_s']}"
                  f"/s / {bound['round_trips_per_lifecycle']} round trips per lifecycle)"),
        ("share reached", f"{bound['share_of_bound']:8.1%}   (target: at least {SHARE_TARGET:.0%}; {verdict})"),
        ("against the API calls alone", f"{bound['share_of_api_bound']:8.1%}   of "
                                        f"{bound['api_bound_lifecycles_per_s']} lifecycles/s (raw inserts / "
                                        f"{bound['api_round_trips_per_lifecycle']}: the round trips the client "
                                        "waits for)"),
    ]


def _grouping_rows(http: dict, number: str, grouping: str) -> list[tuple[str, str]]:
    """One grouping's lifecycles: ours, then the other queue's if measured."""
    return [
        (f"2{number}. sequential lifecycles over HTTP, {GROUPINGS[grouping]}: {http['lifecycles']} from one "
         "official client, claimWork tasks: 1", ""),
        ("lifecycles", f"{http['lifecycles_per_s']:8.2f} /s   ({http['lifecycles']} in {http['seconds']} s; "
                       f"{1000 * http['seconds'] / http['lifecycles']:.1f} ms each)"),
        *[(f"{call} latency", latency_text(http["latency"][call])) for call in CALLS],
        *_against_rows(http),
    ]


def _against_rows(http: dict) -> list[tuple[str, str]]:
    if "against" not in http:
        return []
    other = http["against"]
    return [
        ("rate of each block, ours", ", ".join(f"{rate:.2f}" for rate in http["blocks_per_s"])),
        (f"   the same lifecycles against {other['root_url']}", ""),
        ("lifecycles", f"{other['lifecycles_per_s']:8.2f} /s   ({other['lifecycles']} in {other['seconds']} s; "
                       f"blocks: {', '.join(f'{rate:.2f}' for rate in other['blocks_per_s'])})"),
        *[(f"{call} latency", latency_text(other["latency"][call])) for call in CALLS],
        ("ours / theirs", f"{http['ratio_to_against']:8.2f}x"),
    ]


def _headline(results: dict) -> str:
    bound, http = results["ratio"], _counted(results)
    against = "".join(f"; {GROUPINGS[grouping]}: {figures['ratio_to_against']:.2f}x the "
                      f"{figures['against']['lifecycles_per_s']:.2f} /s of {figures['against']['root_url']}"
                      for grouping, figures in results["http"].items()
                      if grouping in GROUPINGS and "against" in figures)
    return (f"headline: {http['lifecycles_per_s']:.2f} sequential lifecycles/s = "
            f"{bound['share_of_bound']:.1%} of the raw storage bound ({bound['bound_lifecycles_per_s']} /s = "
            f"{bound['raw_inserts_per_s']} inserts/s / {bound['round_trips_per_lifecycle']} round trips; "
            f"target >= {SHARE_TARGET:.0%}){against}")


if __name__ == "__main__":
    sys.exit(main())
