"""Benchmarks through Azure's throttling (`devhost.throttling`): `--throttle SCALE` puts the
proxy, Azure's scalability targets divided by SCALE, between the hosts and Azurite, and the
figures it counts go into the results: requests served, refused (503 ServerBusy) and timed
out after landing (500 OperationTimedOut), each of the last two a request the storage client
sent again; and the hottest partition, its share of what was served and its rate."""

from __future__ import annotations

from contextlib import contextmanager

from devhost.azurite import Azurite
from devhost.throttling.process import ThrottledStorage
from devhost.throttling.costs import SCAN
from devhost.throttling.targets import hottest

from bench.report import progress


def add_arguments(parser) -> None:
    parser.add_argument("--throttle", type=float, default=None, metavar="SCALE",
                        help="storage through Azure's throttling, its targets divided by SCALE (docs/throttling.md)")


@contextmanager
def storage(azurite: Azurite, scale: float | None):
    """What the hosts use for storage (anything with a `connection_string`): Azurite itself,
    or the proxy in front of it; and the proxy (None without one)."""
    if not scale:
        yield azurite, None
        return
    with ThrottledStorage(azurite.connection_string, scale) as throttled:
        rates = throttled.counts()["rates"]
        progress(f"storage throttled at Azure's targets / {scale:g}: {rates['partition_entities_per_s']:g} entities/s "
                 f"a table partition, {rates['queue_messages_per_s']:g} messages/s a queue, "
                 f"{rates['account_requests_per_s']:g} requests/s the account")
        yield throttled, throttled


def figures(throttled: ThrottledStorage, reset: bool = False) -> dict:
    """What the proxy counted (since its start or the last reset; `reset`: start again)."""
    counts = throttled.reset() if reset else throttled.counts()
    account = counts["account"]
    seconds = counts["seconds"] or 1.0
    return {"scale": counts["scale"], "rates": counts["rates"], "seconds": seconds,
            "served": account["requests"], "refused": account["refused"], "timed_out": account["timed_out"],
            "retried": account["refused"] + account["timed_out"],
            "served_per_s": round(account["requests"] / seconds, 1),
            "refused_share": round(account["refused"] / max(1, account["requests"] + account["refused"]), 4),
            "hottest": hottest(counts), "partitions": len(counts["partitions"]),
            "scanned_units": sum(figures["units"] for name, figures in counts["partitions"].items()
                                 if name.endswith(SCAN))}


def rows(throttling: dict | None) -> list[tuple[str, str]]:
    if not throttling:
        return []
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
    ]
