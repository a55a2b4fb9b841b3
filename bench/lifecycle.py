"""Task lifecycles per second, beside the storage they are made of.

    python -m bench.lifecycle [--tasks N] [--workers W]

One Azurite (in memory, free ports) serves every measurement, so the figures are
comparable with each other and not with another machine's:
1. the raw storage baseline (single-entity inserts and point reads), the yardstick;
2. full lifecycles (createTask -> claimWork -> reportCompleted) through the HTTP API of
   the real local host, with the official taskcluster client;
3. the ratio of the two;
4. storage round trips per lifecycle, counted exactly in-process, per step, including the
   host's background work (the 'task resolved' event, the repair sweep) and each task's
   share of every time-driven sweep (claim expiry, deadlines, expiration, workers and task
   queues); the total is the headline figure;
then the baseline once more, to show whether Azurite slowed down as its tables grew.
See bench/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from devhost.azurite import Azurite

from bench import http_lifecycles
from bench import operation_counts
from bench import storage_baseline
from bench import throttled
from bench.report import command_line, elapsed, header, machine, progress, table, write_json


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.lifecycle", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=300, help="lifecycles through the HTTP API (default 300)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent workers and creators (default 8)")
    operation_counts.add_arguments(parser)
    storage_baseline.add_arguments(parser)
    throttled.add_arguments(parser)
    parser.add_argument("--skip-http", action="store_true", help="leave out the HTTP run (no local host needed)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def measure(azurite: Azurite, scratch: Path) -> dict:
        out = {}
        if not args.skip_http:
            out["http"] = http_lifecycles.measure(azurite, args.tasks, args.workers, scratch, progress,
                                                  args.throttle, args.heat)
        out["operations"] = operation_counts.count(azurite.connection_string, args.count, progress,
                                                    group_per_task=args.group_per_task)
        return out

    return run("lifecycle", args, measure, _ratio, _rows,
               lambda results: operation_counts.headline(results["operations"]))


def run(name: str, args: argparse.Namespace, measure, ratio, rows, headline=None) -> int:
    """The frame every benchmark shares: the machine, one Azurite (in memory, free ports),
    the storage baseline before and after `measure(azurite, scratch folder)` (a dict of
    results), `ratio(results)` against the baseline, the table of the baseline's rows and
    `rows(results)`, the `headline(results)` line, and the JSON in
    bench/results/<name>-<UTC time>.json. Exits 1 if a measurement says it failed."""
    info = machine()
    print(header(info), flush=True)
    results = {"command": command_line(f"bench.{name}"), "machine": info}
    with Azurite() as azurite, tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        progress(f"Azurite up (in memory), tables on port {azurite.ports['table']}")
        results["baseline"] = baseline(azurite, args, "before")
        results.update(measure(azurite, Path(scratch)))
        results["baseline_after"] = baseline(azurite, args, "after")
    results["ratio"] = ratio(results)
    if headline is not None:
        results["headline"] = headline(results)
    results["seconds"] = round(elapsed(), 1)
    print(table([*baseline_rows(results), *rows(results)]), flush=True)
    if headline is not None:
        print(f"\n{results['headline']}")
    print(f"\nresults: {write_json(name, results)}  ({results['seconds']} s in all)")
    return 1 if any(isinstance(part, dict) and "failed" in part for part in results.values()) else 0


def baseline(azurite: Azurite, args: argparse.Namespace, when: str) -> dict:
    progress(f"storage baseline ({when}): {args.baseline_ops} inserts, then point reads, "
             f"{args.baseline_threads} threads")
    figures = storage_baseline.measure(azurite.connection_string, args.baseline_ops, args.baseline_threads)
    progress(f"  {figures['inserts_per_s']} inserts/s, {figures['reads_per_s']} reads/s")
    return figures


def _ratio(results: dict) -> dict:
    """The HTTP rate against the raw insert rate measured just before it, and what the
    counted operations would allow if each cost one raw insert (a storage-bound ceiling)."""
    raw = results["baseline"]["inserts_per_s"]
    ops = results["operations"]["total_per_lifecycle"]
    out = {"storage_bound_lifecycles_per_s": round(raw / ops, 1)}
    if "http" in results:
        rate = results["http"]["lifecycles_per_s"]
        out["lifecycles_per_raw_insert"] = round(rate / raw, 4)
        out["raw_inserts_per_lifecycle"] = round(raw / rate, 1)
        # Above 1, each counted operation costs more than a raw insert did: time goes to
        # the host, contention or slower requests (queries, batches), not to request count.
        out["time_per_counted_operation_in_raw_inserts"] = round(raw / rate / ops, 2)
    return out


def _rows(results: dict) -> list[tuple[str, str]]:
    return [*_http_rows(results), *throttled.rows((results.get("http") or {}).get("throttling")),
            *_ratio_rows(results),
            *operation_counts.rows(results["operations"], 4, _ceiling_rows(results))]


def baseline_rows(results: dict) -> list[tuple[str, str]]:
    before, after = results["baseline"], results["baseline_after"]
    return [
        (f"1. storage baseline: azure-data-tables, {before['threads']} threads, "
         f"{before['entity_bytes']}-byte entities, one partition each", ""),
        ("single-entity inserts", f"{before['inserts_per_s']:8.1f} /s   ({before['operations']} in "
                                  f"{before['insert_seconds']} s)"),
        ("point reads", f"{before['reads_per_s']:8.1f} /s   ({before['operations']} in {before['read_seconds']} s)"),
        ("inserts, at the end", f"{after['inserts_per_s']:8.1f} /s   (drift check; reads {after['reads_per_s']} /s)"),
    ]


def _http_rows(results: dict) -> list[tuple[str, str]]:
    http = results.get("http")
    if http is None:
        return [("2. lifecycles over HTTP: skipped (--skip-http)", "")]
    seconds, latency = http["seconds"], http["latency"]
    drained = seconds["events_drained_after_last_completion"]
    return [
        (f"2. lifecycles over HTTP: {http['tasks']} tasks, {http['workers']} workers (official client, "
         f"<= {http['claim_batch']} tasks per claimWork)", ""),
        ("lifecycles", f"{http['lifecycles_per_s']:8.1f} /s   ({http['tasks']} in {seconds['total']} s, "
                       "first create to last completion)"),
        ("createTask", f"{http['creates_per_s']:8.1f} /s   ({seconds['create']} s)"),
        ("claimWork + reportCompleted", f"{http['claim_completes_per_s']:8.1f} /s   ({seconds['claim_complete']} s)"),
        *[(f"{call} latency", latency_text(latency[call])) for call in ("createTask", "claimWork", "reportCompleted")],
        ("tasks per claimWork answer", ", ".join(f"{n}: {calls}x" for n, calls in http["tasks_per_claimWork"].items())),
        ("host's events drained", f"{drained} s after the last completion" if drained is not None
         else f"NOT drained; left: {http['events_left_undrained']}"),
    ]


def latency_text(figures: dict) -> str:
    return f"p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms, max {figures['max_ms']} ms ({figures['count']} calls)"


def _ratio_rows(results: dict) -> list[tuple[str, str]]:
    ratio = results["ratio"]
    if "lifecycles_per_raw_insert" not in ratio:
        return []
    return [
        ("3. ratio", ""),
        ("lifecycles/s / raw inserts/s", f"{ratio['lifecycles_per_raw_insert']:8.4f}"),
        ("raw-insert-equivalents per lifecycle", f"{ratio['raw_inserts_per_lifecycle']:8.1f}"),
    ]


def _ceiling_rows(results: dict) -> list[tuple[str, str]]:
    ratio = results["ratio"]
    rows = [("ceiling if each round trip cost one raw insert",
             f"{ratio['storage_bound_lifecycles_per_s']:8.1f} lifecycles/s")]
    if "time_per_counted_operation_in_raw_inserts" in ratio:
        per_trip = ratio["time_per_counted_operation_in_raw_inserts"]
        rows.append(("measured time per counted round trip", f"{per_trip:8.2f} raw inserts"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
