"""The task state machine through the real services on a real Azurite (issue: random
sequences of API calls and timer firings never reach an illegal state).

A smaller sibling of `tests/domain/test_state_machine.py`: the same invariants (imported
from there, they work on the status JSON), checked on what `services.task_calls.status` reads
back from storage after every step, plus the indexes the services keep beside the task
row: the queue's pending count and claimed count must agree with the task's own state.

Time. The services read the real clock for API calls; the sweeps take an explicit `now`.
A sweep may fire on time (`now` = the real time), exactly at a boundary (`takenUntil`, the
deadline) or late (after it), which often means a `now` in the future. Once a sweep has
used a future `now`, an API call made at the real, earlier time would travel back in time
(e.g. claim a retry run before it was scheduled) and fail for reasons no deployment can
meet; so every API call first waits until the real clock has caught up with the latest
time any sweep used. Those waits come out of a small per-example budget; a sweep far in
the future (a deadline minutes away) exhausts it, and the example goes on with timers
only, as a queue would after its deadline if no worker called again.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from shared.domain.errors import Conflict, NotFound, QueueError
from shared.domain.ids import new_slugid
from shared.domain.lifecycle import MAX_RUNS
from tests.conftest import make_task, memory_services
from tests.domain.test_state_machine import (
    RESOLVED_STATES, RETRY_REASON_FOR, expected_report, WORKER_EXCEPTION_REASONS, check_status_json, check_step_json, iso,
    task_state, ts,
)

CLAIM_TIMEOUT = 1            # seconds: claims run out within an example
NEAR_DEADLINE = 2.0          # seconds after creation, for examples that reach their deadline
FAR_DEADLINE = 240.0         # seconds: reached only by a sweep in the future (< the 10-minute
                             # cursor lag of the time index, so later examples' rows stay visible)
WAIT_BUDGET = 2.0            # seconds of real waiting per example
REPORTS = ["completed", "failed", *WORKER_EXCEPTION_REASONS]
REPORT = st.sampled_from(REPORTS + ["worker-shutdown", "intermittent-task"])  # retryable ones twice
PICK = st.one_of(st.just(-1), st.just(-1), st.integers(0, 2))   # mostly the latest run
AT_TAKEN_UNTIL = st.sampled_from([True, True, True, False])      # claim sweeps: mostly at takenUntil


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def floor_ms(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class QueueThroughServices(RuleBasedStateMachine):
    """One task on a queue of its own, driven through one services instance."""

    services = None  # set by the test: one instance for all examples

    @initialize(retries=st.integers(0, 2), near_deadline=st.booleans(),
                unscheduled=st.sampled_from([False, False, False, True]))
    def create(self, retries, near_deadline, unscheduled):
        self.queue_id = f"sm-{uuid.uuid4().hex[:8]}/w-{uuid.uuid4().hex[:8]}"
        self.task_id = new_slugid()
        self.retries = retries
        self.budget = WAIT_BUDGET
        self.hint_dropped = False   # claimWork past the deadline drops the pending run's hint
        created = utcnow()
        deadline = created + timedelta(seconds=NEAR_DEADLINE if near_deadline else FAR_DEADLINE)
        extra = {}
        if unscheduled:
            # A dependency that never resolves (on another queue) keeps the task unscheduled.
            blocker = new_slugid()
            self.services.task_calls.create(blocker, make_task(f"{self.queue_id}-blocker"))
            extra["dependencies"] = [blocker]
        status = self.services.task_calls.create(
            self.task_id, make_task(self.queue_id, retries=retries, deadline=iso(deadline), **extra))
        self.horizon = utcnow()     # the latest time the task has been touched at
        self.deadline = ts(status["deadline"])
        self.status = self.read()
        assert self.status["state"] == ("unscheduled" if unscheduled else "pending")

    # -- helpers --

    def read(self) -> dict:
        status = self.services.task_calls.status(self.task_id)
        assert status["taskId"] == self.task_id and status["taskQueueId"] == self.queue_id
        return status

    @property
    def runs(self) -> list[dict]:
        return self.status["runs"]

    def catch_up(self) -> bool:
        """Wait until the real clock has passed every time a sweep used; False (and no
        call) when that would exceed the example's waiting budget."""
        lag = (self.horizon - utcnow()).total_seconds()
        if lag > self.budget:
            self.budget = 0
            return False
        if lag > 0:
            self.budget -= lag
            time.sleep(lag + 0.002)
        return True

    def before(self, moment: datetime, t0: datetime, t1: datetime) -> bool | None:
        """Whether a call made within [t0, t1] happened before `moment`: True or False when
        the whole window is on one side, None when the window spans it."""
        if t1 < moment:
            return True
        return False if t0 >= moment else None

    def call(self, action: str, function, expect) -> tuple[datetime, datetime]:
        """Make one API call at the real time; `expect(t0, t1)` says, from the window the
        call happened in, what it must do: 'change', 'noop', the QueueError subclass it must
        raise, or None when either is right (the window spans a boundary)."""
        before = self.status
        t0 = utcnow()
        try:
            function()
            refused = None
        except QueueError as error:
            refused = error
        t1 = utcnow()
        self.horizon = max(self.horizon, t1)
        after = self.read()
        expected = expect(t0, t1)
        # Shown by --hypothesis-show-statistics: which outcomes the examples reached.
        event(f"{action}: {'refused' if refused else 'done'} (expected {getattr(expected, '__name__', expected)})")
        if refused is not None:
            assert expected is None or isinstance(expected, type), f"{action} was refused ({refused!r}) but is legal"
            assert expected is None or type(refused) is expected, f"{action} raised {refused!r}, expected {expected}"
            assert after == before, f"refused {action} changed the task"
        else:
            assert not isinstance(expected, type), f"{action} should have raised {expected.__name__}"
            if expected == "noop":
                assert after == before, f"{action} should have changed nothing"
            elif expected == "change":
                assert after != before, f"{action} changed nothing"
        self.step_to(after, t0, t1)
        return t0, t1

    def step_to(self, after: dict, t0: datetime, t1: datetime) -> None:
        """Check the step from the last status to `after`, which happened within [t0, t1]."""
        before = self.status
        in_time = self.before(self.deadline, t0, t1)
        check_step_json(before, after, self.retries, None if in_time is None else (t1 if in_time else t0))
        # Whatever this step wrote, it wrote with a time inside its window.
        for index, new in enumerate(after["runs"]):
            old = before["runs"][index] if index < len(before["runs"]) else {}
            for field in ("scheduled", "started", "resolved"):
                if field in new and field not in old:
                    assert floor_ms(t0) <= ts(new[field]) <= t1, f"{field} {new[field]} outside [{t0}, {t1}]"
        if after["state"] != "pending":
            self.hint_dropped = False
        self.status = after

    def expect_retry(self, reason: str, retries_left: int, count: int, in_time: bool | None) -> None:
        """After a retryable exception a retry run follows while retries last, if before the
        deadline (`in_time`; None: too close to call). Past it, never."""
        added = self.runs[count:]
        if reason in RETRY_REASON_FOR and retries_left > 0 and count < MAX_RUNS and (in_time or added):
            assert [run["reasonCreated"] for run in added] == [RETRY_REASON_FOR[reason]], added
            assert self.status["state"] == "pending"
            assert in_time is not False, "a retry run after the deadline"
        else:
            assert not added, f"{reason} added {added}"
            assert self.status["state"] == (reason if reason in ("completed", "failed") else "exception")

    def run_at(self, pick: int) -> tuple[int, dict | None]:
        """-1: the latest run (the usual target); else any id, even an unknown one."""
        run_id = len(self.runs) - 1 if pick < 0 else pick
        return run_id, (self.runs[run_id] if 0 <= run_id < len(self.runs) else None)

    @rule(call=st.one_of(   # a call's weight is how often it is listed
        st.tuples(st.just("claim_work")),
        st.tuples(st.just("report"), PICK, REPORT),
        st.tuples(st.just("claim_expiry_fires"), AT_TAKEN_UNTIL, st.sampled_from([0, 0, 1, 250])),
        st.tuples(st.just("reclaim"), PICK),
        st.tuples(st.just("claim_work")),
        st.tuples(st.just("report"), PICK, REPORT),
        st.tuples(st.just("claim_expiry_fires"), AT_TAKEN_UNTIL, st.sampled_from([0, 0, 1, 250])),
        st.tuples(st.just("reclaim"), PICK),
        st.tuples(st.just("wait"), st.sampled_from([0.3, 0.6, 1.1])),
        st.tuples(st.just("deadline_fires"), st.sampled_from([False, False, True]), st.sampled_from([0, 1, 500])),
        st.tuples(st.just("cancel")),
        st.tuples(st.just("rerun")),
        st.tuples(st.just("schedule")),
    ))
    def step(self, call):
        """One API call, timer firing or wait, e.g. `('report', -1, 'worker-shutdown')`. A
        single rule, because hypothesis' swarm testing switches whole rules off for an
        example and would leave many of these short sequences without, say, claims."""
        name, *args = call
        getattr(self, name)(*args)

    # -- worker calls --

    def claim_work(self):
        if not self.catch_up():
            return
        pending = self.status["state"] == "pending"

        def expect(t0, t1):
            if not pending:
                return "noop"
            in_time = self.before(self.deadline, t0, t1)
            return None if in_time is None else ("change" if in_time else "noop")
        claimed = []
        t0, t1 = self.call("claimWork", lambda: claimed.extend(
            self.services.work_claimer.claim_work(self.queue_id, "wg", "worker", 1)["tasks"]), expect)
        if expect(t0, t1) == "change":
            assert len(claimed) == 1, "claimWork did not hand out the pending run"
        if pending and not claimed and t1 >= self.deadline:
            self.hint_dropped = True
        # Only this task's pending run can be handed out on this queue, and only once.
        assert len(claimed) <= 1 and (not claimed or pending), claimed
        if claimed:
            assert claimed[0]["status"]["taskId"] == self.task_id
            assert claimed[0]["runId"] == len(self.runs) - 1 and self.runs[-1]["state"] == "running"
            assert claimed[0]["takenUntil"] == self.runs[-1]["takenUntil"]

    def reclaim(self, pick):
        if not self.catch_up():
            return
        run_id, run = self.run_at(pick)

        def expect(t0, t1):
            if run is None:
                return NotFound
            if run_id != len(self.runs) - 1 or run["state"] != "running":
                return Conflict
            alive = self.before(ts(run["takenUntil"]), t0, t1)
            in_time = self.before(self.deadline, t0, t1)
            if alive is False or in_time is False:
                return Conflict     # the claim was lost, even if no sweep has expired it yet
            # Times are kept to the millisecond: a reclaim in the very millisecond of the claim
            # (or of the last reclaim) sets the same takenUntil, which changes nothing.
            same_millisecond = floor_ms(t0) + timedelta(seconds=CLAIM_TIMEOUT) <= ts(run["takenUntil"])
            return "change" if alive and in_time and not same_millisecond else None
        self.call("reclaimTask", lambda: self.services.work_claimer.reclaim(self.task_id, run_id), expect)

    def report(self, pick, reason):
        if not self.catch_up():
            return
        run_id, run = self.run_at(pick)
        expected = expected_report(run, reason)
        resolutions = self.services.resolutions
        report = {"completed": lambda: resolutions.completed(self.task_id, run_id),
                  "failed": lambda: resolutions.failed(self.task_id, run_id)}.get(
            reason, lambda: resolutions.exception(self.task_id, run_id, reason))
        retries_left, count = self.status["retriesLeft"], len(self.runs)
        t0, t1 = self.call(f"report {reason}", report, lambda t0, t1: expected)
        if expected == "change":
            assert self.runs[run_id]["reasonResolved"] == reason
            self.expect_retry(reason, retries_left, count, self.before(self.deadline, t0, t1))

    # -- user calls --

    def task_call(self, name: str):
        if not self.catch_up():
            return
        state = self.status["state"]

        def expect(t0, t1):
            in_time = self.before(self.deadline, t0, t1)
            if in_time is None:
                return None
            if not in_time:
                return Conflict     # scheduleTask, cancelTask and rerunTask refuse past the deadline
            if name == "schedule":
                return "change" if state == "unscheduled" else "noop"
            if name == "cancel":
                return "noop" if state in RESOLVED_STATES else "change"
            if state in ("pending", "running"):
                return "noop"
            return Conflict if len(self.runs) >= MAX_RUNS else "change"
        t0, t1 = self.call(f"{name}Task", lambda: getattr(self.services.task_calls, name)(self.task_id), expect)
        if expect(t0, t1) == "change" and name == "rerun":
            assert self.runs[-1]["reasonCreated"] == "rerun" and self.status["retriesLeft"] == self.retries

    def schedule(self):
        self.task_call("schedule")

    def cancel(self):
        self.task_call("cancel")

    def rerun(self):
        self.task_call("rerun")

    # -- time --

    def wait(self, seconds):
        """Let real time pass (claims last 1 s; near deadlines come 2 s after creation)."""
        seconds = min(seconds, self.budget)
        self.budget -= seconds
        time.sleep(seconds)

    def sweep_time(self, boundary: datetime | None, late_ms: int) -> datetime:
        """When a timer fires: on time (the real now) or at/after `boundary`, but never before
        anything that already happened to the task."""
        now = max(self.horizon, utcnow())
        if boundary is not None:
            now = max(now, boundary + timedelta(milliseconds=late_ms))
        return now

    def claim_expiry_fires(self, at_taken_until, late_ms):
        before = self.status
        run = self.runs[-1] if self.runs else None
        boundary = ts(run["takenUntil"]) if at_taken_until and run and "takenUntil" in run else None
        now = self.sweep_time(boundary, late_ms)
        retries_left, count = before["retriesLeft"], len(self.runs)
        due = run is not None and run["state"] == "running" and ts(run["takenUntil"]) <= now
        # Leftover index rows of earlier examples may come due too: at least our change.
        event(f"claim expiry: {'due' if due else 'nothing due'}")
        assert self.services.claim_resolver.sweep(now=now) >= (1 if due else 0), "the sweep missed an expired claim"
        self.horizon = max(self.horizon, now)
        self.step_to(self.read(), now, now)
        if due:
            expired = self.runs[count - 1]
            assert (expired["reasonResolved"], expired["resolved"]) == ("claim-expired", iso(now)), expired
            self.expect_retry("claim-expired", retries_left, count, now < self.deadline)
        else:
            assert self.status == before, "nothing was due, yet the claim sweep changed the task"

    def deadline_fires(self, at_deadline, late_ms):
        before = self.status
        now = self.sweep_time(self.deadline if at_deadline else None, late_ms)
        due = now >= self.deadline and before["state"] not in RESOLVED_STATES
        event(f"deadline: {'due' if due else 'nothing due'}")
        assert self.services.deadline_resolver.sweep(now=now) >= (1 if due else 0), "the sweep missed a passed deadline"
        self.horizon = max(self.horizon, now)
        self.step_to(self.read(), now, now)
        if due:
            last = self.runs[-1]
            assert (self.status["state"], last["reasonResolved"], last["resolved"]) == \
                   ("exception", "deadline-exceeded", iso(now)), last
            assert len(self.runs) == max(len(before["runs"]), 1)
        else:
            assert self.status == before, "nothing was due, yet the deadline sweep changed the task"

    # -- invariants --

    @invariant()
    def status_is_legal(self):
        check_status_json(self.status, self.retries, MAX_RUNS)
        assert self.status["state"] == task_state(self.runs)

    @invariant()
    def queue_counts_agree_with_the_task(self):
        """The pending hint and the claimed-run row exist exactly while the task is pending or
        running. (claimWork past the deadline drops the hint of a pending run it may no
        longer hand out; the deadline sweep then resolves the run.)"""
        assert self.services.dependency_resolver.settled()   # the claimed row goes after the call answers
        counts = self.services.task_queues.counts(self.queue_id)
        state = self.status["state"]
        if not (state == "pending" and self.hint_dropped):
            assert counts["pendingTasks"] == (1 if state == "pending" else 0), (counts, state)
        assert counts["claimedTasks"] == (1 if state == "running" else 0), (counts, state)


def test_task_lifecycle_through_services():
    QueueThroughServices.services = memory_services(claim_timeout=CLAIM_TIMEOUT, claim_work_wait=0)
    try:
        # The rules depend on the real clock, so an example does not replay the same way: no
        # example database and no shrinking (either reports a flaky strategy, not the failure).
        run_state_machine_as_test(QueueThroughServices, settings=settings(
            max_examples=15, stateful_step_count=12, deadline=None, derandomize=False, database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow]))
    finally:
        QueueThroughServices.services = None


def test_a_claim_expiring_after_the_deadline_is_not_retried():
    """The domain finding, through the services: the claim resolver fires after the deadline
    (before the deadline resolver). The retry run it adds is pending past the deadline:
    counted in pendingTasks, unclaimable, and later resolved as deadline-exceeded."""
    services = memory_services(claim_timeout=CLAIM_TIMEOUT, claim_work_wait=0)
    queue_id, task_id = f"sm-{uuid.uuid4().hex[:8]}/late-expiry", new_slugid()
    deadline = utcnow() + timedelta(seconds=FAR_DEADLINE)
    services.task_calls.create(task_id, make_task(queue_id, retries=1, deadline=iso(deadline)))
    assert services.work_claimer.claim_work(queue_id, "wg", "worker", 1)["tasks"][0]["runId"] == 0
    late = ts(iso(deadline)) + timedelta(seconds=1)
    assert services.claim_resolver.sweep(now=late) >= 1
    status = services.task_calls.status(task_id)
    assert [run.get("reasonResolved") for run in status["runs"]] == ["claim-expired"], status["runs"]
    assert status["state"] == "exception" and status["retriesLeft"] == 1
    assert services.task_queues.counts(queue_id)["pendingTasks"] == 0
