"""Azure Storage's scalability targets for a standard account, scaled down, the budgets that
enforce them, and the counts of what each partition served and refused.

Azure's published figures (learn.microsoft.com/azure/storage/tables/scalability-targets,
.../queues/scalability-targets, .../common/scalability-targets-standard-account):
- a single table partition: up to 2,000 entities per second (1 KiB entities);
- a storage account: 20,000 transactions (tables) / messages (queues) / requests per second;
- a single queue: up to 2,000 messages per second (1 KiB messages).
Beyond them Azure "begins to return error code 503 (Server Busy) or error code 500
(Operation Timeout)", and asks clients to back off exponentially.

Each target is a budget (a token bucket) holding a second's worth of its rate. A request is
served while every budget it draws on is above zero, and then draws what it costs, which may
take a budget below zero (a 100-entity transaction on a small budget): the debt is paid
back at the rate before anything else is served there. A refused request draws nothing.
A write served while one of its budgets is below half is "near the limit": a share of those
(`timeouts`) are answered 500 OperationTimedOut after they were carried out.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable

from devhost.throttling.costs import SCAN, Charge

PARTITION_ENTITIES_PER_S = 2_000
ACCOUNT_REQUESTS_PER_S = 20_000
QUEUE_MESSAGES_PER_S = 2_000
BURST_SECONDS = 1.0
ACCOUNT_WIDE = "(account)"   # the counts of requests on no partition: tables or queues created, listings
ACCOUNT_BUSY = "Operations per second is over the account limit."
PARTITION_BUSY = "The server is currently unable to receive requests. Please retry your request."


def rates(scale: float) -> dict[str, float]:
    """The targets divided by `scale`."""
    return {"partition_entities_per_s": PARTITION_ENTITIES_PER_S / scale,
            "account_requests_per_s": ACCOUNT_REQUESTS_PER_S / scale,
            "queue_messages_per_s": QUEUE_MESSAGES_PER_S / scale}


class Budget:
    """A token bucket that may go into debt."""

    __slots__ = ("rate", "capacity", "level", "at")

    def __init__(self, rate: float, now: float) -> None:
        self.rate, self.capacity, self.level, self.at = rate, rate * BURST_SECONDS, rate * BURST_SECONDS, now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    @property
    def low(self) -> bool:
        return self.level < self.capacity / 2


@dataclass
class Verdict:
    refusal: str | None       # why it is refused (Azure's message), or None: served
    time_out: bool = False    # served, and then answered 500 OperationTimedOut


class Throttle:
    """Decides each request's fate and counts, by partition: requests and units served,
    requests refused (503) and requests timed out after being served (500)."""

    def __init__(self, scale: float, timeouts: float = 0.05, seed: int | None = None,
                 clock: Callable[[], float] = time.monotonic, transaction_timeouts: bool = True) -> None:
        """`timeouts`: the share of writes near a limit that time out after landing;
        `transaction_timeouts`: whether entity group transactions may be among them."""
        if scale <= 0:
            raise ValueError("the scale factor must be positive")
        self.scale, self.timeouts, self.transaction_timeouts = scale, timeouts, transaction_timeouts
        self._clock, self._random, self._lock = clock, random.Random(seed), threading.Lock()
        self._armed: list[tuple[str, Callable[[Charge], bool]]] = []
        self.reset()


    def reset(self) -> None:
        with self._lock:
            now = self._clock()
            self._since = now
            self._account = Budget(ACCOUNT_REQUESTS_PER_S / self.scale, now)
            self._partitions: dict[str, Budget] = {}
            self._counts: dict[str, list[int]] = {}

    def arm(self, kind: str, where: Callable[[Charge], bool] = lambda charge: charge.write) -> None:
        """Answer the next request `where` says with `kind`: "busy" (503, not carried out) or
        "timeout" (500 after it was carried out), whatever the budgets say (for tests)."""
        if kind not in ("busy", "timeout"):
            raise ValueError(kind)
        with self._lock:
            self._armed.append((kind, where))

    def admit(self, charge: Charge) -> Verdict:
        with self._lock:
            now = self._clock()
            counts = self._count(charge.partition)
            forced = self._forced(charge)
            budgets = [self._account] + ([self._budget(charge, now)] if charge.limited else [])
            for budget in budgets:
                budget.refill(now)
            refusal = PARTITION_BUSY if forced == "busy" else next(
                (ACCOUNT_BUSY if budget is self._account else PARTITION_BUSY
                 for budget in budgets if budget.level <= 0), None)
            if refusal:
                counts[2] += 1
                return Verdict(refusal)
            self._account.level -= 1
            if charge.limited:
                budgets[-1].level -= charge.units
            counts[0] += 1
            counts[1] += charge.units
            near = any(budget.low for budget in budgets)
            may_time_out = charge.write and (self.transaction_timeouts or not charge.transaction)
            time_out = forced == "timeout" or (
                forced is None and may_time_out and near and self._random.random() < self.timeouts)
            counts[3] += time_out
            return Verdict(None, time_out)

    def owe(self, charge: Charge, units: int) -> None:
        """Units a request turned out to cost beyond its charge (rows its answer carried)."""
        if units <= 0:
            return
        with self._lock:
            self._count(charge.partition)[1] += units
            budget = self._partitions.get(charge.partition)
            if charge.limited and budget is not None:
                budget.level -= units

    def counts(self) -> dict:
        """What was served and refused since the start (or the last reset), by partition."""
        with self._lock:
            partitions = {name: dict(zip(("requests", "units", "refused", "timed_out"), figures))
                          for name, figures in self._counts.items()}
            seconds = self._clock() - self._since
        total = {key: sum(figures[key] for figures in partitions.values())
                 for key in ("requests", "units", "refused", "timed_out")}
        return {"scale": self.scale, "rates": rates(self.scale), "seconds": round(seconds, 3), "account": total,
                "partitions": partitions}

    def _budget(self, charge: Charge, now: float) -> Budget:
        budget = self._partitions.get(charge.partition)
        if budget is None:
            rate = (QUEUE_MESSAGES_PER_S if charge.service == "queue" else PARTITION_ENTITIES_PER_S) / self.scale
            budget = self._partitions[charge.partition] = Budget(rate, now)
        return budget

    def _count(self, partition: str | None) -> list[int]:
        name = partition or ACCOUNT_WIDE
        figures = self._counts.get(name)
        if figures is None:
            figures = self._counts[name] = [0, 0, 0, 0]
        return figures

    def _forced(self, charge: Charge) -> str | None:
        for index, (kind, where) in enumerate(self._armed):
            if where(charge):
                del self._armed[index]
                return kind
        return None


def hottest(counts: dict) -> dict | None:
    """The partition that served the most units, its share of all units served on
    partitions and its rate (units per second over the counted time); None if nothing was
    counted. Scans (queries over many partitions) and account-wide requests are no one
    partition's load: left out."""
    partitions = {name: figures for name, figures in counts["partitions"].items()
                  if name != ACCOUNT_WIDE and not name.endswith(SCAN)}
    total = sum(figures["units"] for figures in partitions.values())
    if not total:
        return None
    name, figures = max(partitions.items(), key=lambda item: item[1]["units"])
    seconds = counts["seconds"] or 1.0
    return {"partition": name, "units": figures["units"], "share": round(figures["units"] / total, 4),
            "units_per_s": round(figures["units"] / seconds, 1), "refused": figures["refused"]}
