"""What the watchdog concludes about a task group whose tasks stopped moving (seed 003's
invariant: a queued group has no workers for its tasks, or makes progress, or is complete).

A group is *quiet* when none of its unresolved tasks changed state (and none joined or
resolved) for the stall time. The watchdog then examines it, acts, and records a verdict:
- `repaired`: it scheduled tasks whose dependencies were all resolved as their `requires`
  demands (the message that would have scheduled them was lost), or handed runs past their
  `takenUntil` to the claim resolver: the group moves again;
- `no-workers`: tasks are pending on task queues that nothing serves (no worker pool, no
  worker seen recently); never cancelled, since a worker may come;
- `stalled`: anything else (workers exist but take nothing, tasks blocked for good): the
  counts are reported and, if the group opted in (`onStall: cancel`), its unresolved tasks
  are cancelled.
A quiet group with a run whose claim is alive (a long task) is healthy: no verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta


REPAIRED, NO_WORKERS, STALLED = "repaired", "no-workers", "stalled"
OK = "ok"                                  # what the view says when no verdict stands
REPORT, CANCEL = "report", "cancel"        # what a group asks to be done once stalled
ON_STALL = (REPORT, CANCEL)
STATES = ("unscheduled", "pending", "running")   # an unresolved task's, counted one by one
# How much longer each look of a group that stays quiet waits, in stall times from when it
# went quiet: 1, 2, 4, 8, then every 8 (a group stalled for a day is looked at every 80
# minutes by default, not every 10; its verdict stands meanwhile).
BACKOFF = (1, 2, 4, 8)
MAX_LISTED = 20                            # task ids a finding lists; its count says how many


@dataclass(frozen=True)
class Verdict:
    state: str                             # REPAIRED, NO_WORKERS or STALLED
    counts: dict                           # tasks by state, and `resolved`
    since: str                             # when the group went quiet
    findings: tuple[dict, ...] = ()        # what was found and done, each with its `kind`
    reported: str = field(default="", compare=False)   # when this verdict was first recorded

    def to_json(self) -> dict:
        return {"state": self.state, "since": self.since, "reportedAt": self.reported, "counts": self.counts,
                "findings": list(self.findings)}

    @classmethod
    def from_json(cls, data: dict) -> Verdict:
        return cls(data["state"], data["counts"], data["since"], tuple(data.get("findings", ())),
                   data.get("reportedAt", ""))

    def encode(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> Verdict | None:
        return cls.from_json(json.loads(text)) if text else None

    @property
    def cancelled(self) -> bool:
        return any(finding["kind"] == "cancelled" for finding in self.findings)

    def describe(self) -> str:
        """One line for a log: the state, the counts, and each finding."""
        counts = ", ".join(f"{state} {number}" for state, number in self.counts.items())
        return f"{self.state} (quiet since {self.since}): {counts}" + "".join(
            f"; {describe_finding(finding)}" for finding in self.findings)


@dataclass(frozen=True)
class ItemNote:
    """What a group's watch item tells the look that handles it: whether a verdict stood as
    it was written (so the group's row is read to clear it), the seconds of deadlines the
    item carries for the deadline resolver, to be indexed once the watchdog is done watching
    the group or the deadline is near (see `GroupWatch`), and whether the group was made
    for one task (`lone`: its row is read first, and if it says so still, its one bucket's
    count answers). Stored as the item's value: "verdict", "lone" and "deadline:<second>"
    words, or nothing."""
    verdict: bool = False
    deadlines: frozenset[str] = frozenset()
    lone: bool = False

    @classmethod
    def parse(cls, value: str) -> ItemNote:
        words = value.split()
        return cls(VERDICT_WORD in words, frozenset(word[len(DEADLINE_WORD):] for word in words
                                                    if word.startswith(DEADLINE_WORD)), LONE_WORD in words)

    def text(self) -> str:
        return " ".join([VERDICT_WORD] * self.verdict + [LONE_WORD] * self.lone +
                        [DEADLINE_WORD + second for second in sorted(self.deadlines)])

    def merged(self, other: ItemNote) -> ItemNote:
        """One note for two items of a group (looked at as one)."""
        return ItemNote(self.verdict or other.verdict, self.deadlines | other.deadlines, self.lone or other.lone)


VERDICT_WORD, DEADLINE_WORD, LONE_WORD = "verdict", "deadline:", "lone"


def kept_on_resolution(watch: str) -> str:
    """What of a stored verdict (`Verdict.encode()`, or "") stays once the group resolves:
    a cancel's, which says why it resolved; any other is over."""
    verdict = Verdict.decode(watch)
    return watch if verdict is not None and verdict.cancelled else ""


def judge(repaired: bool, no_workers: bool, live_runs: int) -> str | None:
    """The state of a quiet group: None when it is healthy (a run with a live claim)."""
    if repaired:
        return REPAIRED
    if no_workers:
        return NO_WORKERS
    return None if live_runs else STALLED


def next_look(quiet_since: datetime, now: datetime, stall: timedelta) -> datetime:
    """When to look at a group again: the first point after `now` of a grid that begins at
    `quiet_since` (see BACKOFF). The grid depends only on what storage says, so two index
    items of one group (a race of creators, a sweep that died before removing its item)
    looked at between the same two points are pushed to the same item and become one."""
    for factor in BACKOFF:
        due = quiet_since + stall * factor
        if due > now:
            return due
    step = stall * BACKOFF[-1]
    return quiet_since + step * ((now - quiet_since) // step + 1)


def finding(kind: str, task_ids: list[str] | None = None, **details) -> dict:
    """A finding of `kind`, listing at most MAX_LISTED of `task_ids` with their count."""
    if task_ids is not None:
        details = {"count": len(task_ids), "taskIds": sorted(task_ids)[:MAX_LISTED], **details}
    return {"kind": kind, **details}


def describe_finding(found: dict) -> str:
    kind = found["kind"]
    if kind == NO_WORKERS:
        return f"no workers for {found['taskQueueId']} ({found['pending']} pending): {found['detail']}"
    if kind == "scheduled":
        return f"scheduled {found['count']} task(s) whose dependencies were done: {', '.join(found['taskIds'])}"
    if kind == "claim-expired":
        return f"handed {found['count']} run(s) past takenUntil to the claim resolver: {', '.join(found['taskIds'])}"
    if kind == "cancelled":
        return f"cancelled {found['count']} task(s) (the group asked for it: onStall cancel)"
    return json.dumps(found, sort_keys=True)


def view(task_group_id: str, scheduler_id: str, on_stall: str, stall: timedelta, verdict: Verdict | None) -> dict:
    """The watchdog's view of a group, as the API shows it."""
    out = {"taskGroupId": task_group_id, "schedulerId": scheduler_id, "onStall": on_stall or REPORT,
           "stallAfterSeconds": int(stall.total_seconds()), "state": verdict.state if verdict else OK,
           "findings": list(verdict.findings) if verdict else []}
    if verdict:
        out.update(since=verdict.since, reportedAt=verdict.reported, counts=verdict.counts)
    return out

