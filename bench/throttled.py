"""Benchmarks through Azure's throttling (`devhost.throttling`): `--throttle SCALE` puts the
proxy, Azure's scalability targets divided by SCALE, between the hosts and Azurite, and the
figures it counts go into the results: requests served, refused (503 ServerBusy) and timed
out after landing (500 OperationTimedOut), each of the last two a request the storage client
sent again; and the partitions' heat: the hottest partitions, each one's share of what was
served and its rate in entities per second.

`--heat` puts the same proxy in the path only to count (its targets a thousand times
Azure's, nothing refused or timed out): the storage operations per partition per second of
an unthrottled run. Given the tasks the run completed, the figures say what each task cost
the hottest partition and the account, and so what rate Azure's targets allow that workload
(2,000 entities/s a partition, 20,000 requests/s an account): the ceilings of bench/README.md."""

from __future__ import annotations

import re
from contextlib import contextmanager

from devhost.azurite import Azurite
from devhost.throttling.process import ThrottledStorage
from devhost.throttling.costs import SCAN
from devhost.throttling.targets import ACCOUNT_REQUESTS_PER_S, ACCOUNT_WIDE, PARTITION_ENTITIES_PER_S, hottest

from bench.report import progress

COUNT_ONLY = 0.001   # the scale of `--heat`: targets a thousand times Azure's, which nothing here reaches
HOTTEST_SHOWN = 5
_TEST_PREFIX = re.compile(r"^table t[0-9a-f]{10}")   # a run's table prefix (tests.conftest.unique_prefix)


def add_arguments(parser) -> None:
    parser.add_argument("--throttle", type=float, default=None, metavar="SCALE",
                        help="storage through Azure's throttling, its targets divided by SCALE (docs/throttling.md)")
    parser.add_argument("--heat", action="store_true",
                        help="storage through the proxy only to count operations by partition (nothing throttled)")


@contextmanager
def storage(azurite: Azurite, scale: float | None, heat: bool = False):
    """What the hosts use for storage (anything with a `connection_string`): Azurite itself,
    or the proxy in front of it, throttling at `scale` or (`heat`) counting only; and the
    proxy (None without one)."""
    if not scale and not heat:
        yield azurite, None
        return
    with ThrottledStorage(azurite.connection_string, scale or COUNT_ONLY, timeouts=0.05 if scale else 0.0) as proxy:
        if scale:
            rates = proxy.counts()["rates"]
            progress(f"storage throttled at Azure's targets / {scale:g}: {rates['partition_entities_per_s']:g} "
                     f"entities/s a table partition, {rates['queue_messages_per_s']:g} messages/s a queue, "
                     f"{rates['account_requests_per_s']:g} requests/s the account")
        else:
            progress("storage through the counting proxy: operations by partition, nothing throttled")
        yield proxy, proxy


def figures(throttled: ThrottledStorage, reset: bool = False, tasks: int | None = None) -> dict:
    """What the proxy counted (since its start or the last reset; `reset`: start again);
    with `tasks` (those the counted time completed), each partition's and the account's
    cost per task, and the task rate Azure's targets allow that workload."""
    counts = throttled.reset() if reset else throttled.counts()
    account = counts["account"]
    seconds = counts["seconds"] or 1.0
    out = {"scale": counts["scale"], "rates": counts["rates"], "seconds": seconds, "counting_only": counts["scale"] < 1,
           "served": account["requests"], "refused": account["refused"], "timed_out": account["timed_out"],
           "retried": account["refused"] + account["timed_out"],
           "served_per_s": round(account["requests"] / seconds, 1),
           "refused_share": round(account["refused"] / max(1, account["requests"] + account["refused"]), 4),
           "hottest": hottest(counts), "partitions": len(counts["partitions"]),
           "heat": heat(counts, tasks), "tables": tables(counts, tasks),
           "scanned_units": sum(figures["units"] for name, figures in counts["partitions"].items()
                                if name.endswith(SCAN))}
    if tasks:
        out["tasks"] = tasks
        out["requests_per_task"] = round(account["requests"] / tasks, 2)
        out["azure_account_ceiling_tasks_per_s"] = round(ACCOUNT_REQUESTS_PER_S * tasks / max(1, account["requests"]))
        if out["heat"]:
            out["azure_partition_ceiling_tasks_per_s"] = out["heat"][0]["azure_ceiling_tasks_per_s"]
    return out


def heat(counts: dict, tasks: int | None = None, shown: int | None = HOTTEST_SHOWN) -> list[dict]:
    """The `shown` hottest partitions (None: all) by entities served: each one's share of the
    units served on partitions, its rate, its refusals; with `tasks`, its entities per task
    and the task rate its Azure target (2,000 entities/s) allows. Table names without the
    run's prefix."""
    partitions = {name: figures for name, figures in counts["partitions"].items()   # blobs have no partition target
                  if name != ACCOUNT_WIDE and not name.endswith(SCAN) and not name.startswith("blob ")}
    total = sum(figures["units"] for figures in partitions.values()) or 1
    seconds = counts["seconds"] or 1.0
    ranked = sorted(partitions.items(), key=lambda item: item[1]["units"], reverse=True)[:shown]
    out = []
    for name, figures in ranked:
        row = {"partition": _TEST_PREFIX.sub("table ", name), "units": figures["units"],
               "share": round(figures["units"] / total, 4), "units_per_s": round(figures["units"] / seconds, 1),
               "refused": figures["refused"]}
        if tasks:
            row["units_per_task"] = round(figures["units"] / tasks, 3)
            row["azure_ceiling_tasks_per_s"] = round(PARTITION_ENTITIES_PER_S * tasks / max(1, figures["units"]))
        out.append(row)
    return out


def tables(counts: dict, tasks: int | None = None) -> list[dict]:
    """Each table (or queue) by its hottest partition: how many partitions it had and, with
    `tasks`, the entities per task of its hottest one and of all together. A table whose rows
    are spread over many partitions may be out of the hottest few; this says how hot it is."""
    by_table: dict[str, list[int]] = {}
    for row in heat(counts, tasks, shown=None):
        by_table.setdefault(" ".join(row["partition"].split(" ")[:2]), []).append(row["units"])
    out = []
    for name, units in sorted(by_table.items(), key=lambda item: max(item[1]), reverse=True):
        row = {"table": name, "partitions": len(units), "hottest_units": max(units), "units": sum(units)}
        if tasks:
            row["hottest_units_per_task"] = round(max(units) / tasks, 3)
            row["units_per_task"] = round(sum(units) / tasks, 3)
        out.append(row)
    return out


def rows(throttling: dict | None) -> list[tuple[str, str]]:
    if not throttling:
        return []
    if throttling.get("counting_only"):
        return [("storage through the counting proxy (nothing throttled)",
                 f"{throttling['served']} requests, {throttling['served_per_s']} /s over "
                 f"{throttling['seconds']:.0f} s, {throttling['partitions']} partitions"),
                *heat_rows(throttling)]
    hot = throttling["hottest"] or {}
    return [
        (f"storage throttled: Azure's targets / {throttling['scale']:g} "
         f"({throttling['rates']['partition_entities_per_s']:g} entities/s a partition, "
         f"{throttling['rates']['account_requests_per_s']:g} requests/s the account)", ""),
        ("requests served", f"{throttling['served']:8d}   ({throttling['served_per_s']} /s over "
                            f"{throttling['seconds']:.0f} s, {throttling['partitions']} partitions)"),
        ("retried by the client", f"{throttling['retried']:8d}   ({throttling['refused']} refused 503 ServerBusy, "
                                  f"{throttling['refused_share']:.1%} of attempts; {throttling['timed_out']} "
                                  "500 OperationTimedOut after landing)"),
        ("hottest partition", f"{hot.get('partition', '-')}: {hot.get('share', 0):.1%} of units served on "
                              f"partitions, {hot.get('units_per_s', 0)} /s, {hot.get('refused', 0)} refused "
                              f"(scans across partitions: {throttling['scanned_units']} rows)"),
        *heat_rows(throttling),
    ]


def heat_rows(throttling: dict) -> list[tuple[str, str]]:
    """The hottest partitions, and the ceilings in Azure they and the account give."""
    out = []
    for rank, row in enumerate(throttling.get("heat") or [], 1):
        per_task = (f"; {row['units_per_task']} per task: Azure's 2,000/s allow "
                    f"{row['azure_ceiling_tasks_per_s']} tasks/s") if "units_per_task" in row else ""
        out.append((f"  hot partition {rank}", f"{row['partition']}: {row['share']:.1%} of entities, "
                                                f"{row['units_per_s']} /s{per_task}"))
    if throttling.get("tables") and "hottest_units_per_task" in throttling["tables"][0]:
        out.append(("  tables by their hottest partition", ", ".join(
            f"{row['table'].partition(' ')[2]} {row['hottest_units_per_task']} a task ({row['partitions']} partitions, "
            f"{row['units_per_task']} in all)" for row in throttling["tables"][:6])))
    if "requests_per_task" in throttling:
        out.append(("  account", f"{throttling['requests_per_task']} requests per task: Azure's 20,000/s allow "
                                 f"{throttling['azure_account_ceiling_tasks_per_s']} tasks/s"))
    return out
