"""Property-based test of the task state machine (issue: "random sequences of API calls and
timer firings never reach an illegal state, for example a completed task with a pending run").

A hypothesis `RuleBasedStateMachine` drives one task through the pure transitions of
`shared.domain.lifecycle` with a simulated clock: the rules are the API calls (schedule,
claim, reclaim, report completed/failed/exception, cancel, rerun), the two timers (claim
expiry, deadline) and the clock moving forward. Each rule also knows, from Taskcluster's
documented semantics rather than from `lifecycle`, whether the call must be refused, be a
no-op or change the task, so a refused legal call fails as surely as an accepted illegal one.

The invariants are written against the task status *JSON* (what Taskcluster clients see)
and encoded here independently of `shared.domain` (only the enums of Taskcluster's
task-status schema are restated), so `tests/services/tasks/test_state_machine.py` checks the very
same rules on statuses read back from storage.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from shared.domain import lifecycle
from shared.domain.errors import Conflict, NotFound, QueueError
from shared.domain.runs import ReasonResolved, Run
from shared.domain.task_status import TaskStatus, render_status

# --- Taskcluster's task-status schema, restated (upstream services/queue/schemas/v1/task-status.yml) --

RUN_STATES = {"pending", "running", "completed", "failed", "exception"}
RESOLVED_STATES = {"completed", "failed", "exception"}
REASONS_CREATED = {"scheduled", "retry", "task-retry", "rerun", "exception"}
EXCEPTION_REASONS = {"deadline-exceeded", "canceled", "claim-expired", "worker-shutdown",
                     "malformed-payload", "resource-unavailable", "internal-error", "intermittent-task"}
# What a worker may report (reportCompleted, reportFailed, and task-exception-request's enum).
WORKER_EXCEPTION_REASONS = ("worker-shutdown", "malformed-payload", "resource-unavailable",
                            "internal-error", "intermittent-task")
WORKER_REASONS = {"completed", "failed", *WORKER_EXCEPTION_REASONS}
# The queue retries a run (while retries last) after these, with this reasonCreated.
RETRY_CREATED_AFTER = {"retry": {"worker-shutdown", "claim-expired"}, "task-retry": {"intermittent-task"}}
RETRY_REASON_FOR = {"worker-shutdown": "retry", "claim-expired": "retry", "intermittent-task": "task-retry"}

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
PENDING_KEYS = {"runId", "state", "reasonCreated", "scheduled"}
CLAIM_KEYS = {"workerGroup", "workerId", "takenUntil", "started"}
RESOLVE_KEYS = {"reasonResolved", "resolved"}


@lru_cache(maxsize=4096)
def ts(text: str) -> datetime:
    """Parse a status timestamp (Taskcluster's form, checked) independently of the product."""
    assert TIMESTAMP.fullmatch(text), f"not a UTC millisecond timestamp: {text!r}"
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    """How Taskcluster writes `moment`: UTC, milliseconds, truncated."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def unresolved(run: dict) -> bool:
    return run["state"] in ("pending", "running")


def task_state(runs: list[dict]) -> str:
    """Taskcluster: a task's state is its latest run's state, or `unscheduled` with no runs."""
    return runs[-1]["state"] if runs else "unscheduled"


# --- invariants of one status ---------------------------------------------------------------

def check_status_json(status: dict, retries: int, max_runs: int) -> None:
    """Every rule a task status must obey, whatever happened before."""
    runs, deadline = status["runs"], ts(status["deadline"])
    assert status["state"] == task_state(runs), "the task's state is not its latest run's state"
    # Only the latest run may be pending or running, so there is at most one such run, and a
    # resolved task (completed/failed/exception) has none.
    live = [run["runId"] for run in runs if unresolved(run)]
    assert live in ([], [len(runs) - 1]), f"unresolved runs {live} among {len(runs)} runs"
    if status["state"] in RESOLVED_STATES:
        assert not live, "a resolved task has a pending or running run"
    assert [run["runId"] for run in runs] == list(range(len(runs))), "runIds are not 0..n-1 in order"
    assert len(runs) <= max_runs, f"{len(runs)} runs, more than the {max_runs} allowed"
    assert 0 <= status["retriesLeft"] <= retries, f"retriesLeft {status['retriesLeft']} of {retries}"
    for run in runs:
        check_run_json(run, deadline)
    for before, run in zip(runs, runs[1:]):
        # A new run is only ever added once the one before it is resolved.
        assert ts(run["scheduled"]) >= ts(before["resolved"]), f"run {run['runId']} predates its predecessor"
        if run["reasonCreated"] in RETRY_CREATED_AFTER:
            # A retry follows a retryable exception at once, never any other ending.
            assert before["reasonResolved"] in RETRY_CREATED_AFTER[run["reasonCreated"]], (
                f"run {run['runId']} is a {run['reasonCreated']} after {before['reasonResolved']}")
            assert run["scheduled"] == before["resolved"], f"retry run {run['runId']} was not added at once"
    # retriesLeft counts down once per automatic retry since the task's last rerun (rerun
    # resets it), so a retry run can only have appeared while retries were left.
    since_rerun = runs
    for index, run in enumerate(runs):
        if run["reasonCreated"] == "rerun":
            since_rerun = runs[index + 1:]
    retried = sum(1 for run in since_rerun if run["reasonCreated"] in RETRY_CREATED_AFTER)
    assert status["retriesLeft"] == retries - retried, (
        f"retriesLeft {status['retriesLeft']} but {retried} retries of {retries} used since the last rerun")


def check_run_json(run: dict, deadline: datetime) -> None:
    state, created, reason = run["state"], run["reasonCreated"], run.get("reasonResolved")
    assert state in RUN_STATES and created in REASONS_CREATED, run
    keys = set(run)
    scheduled = ts(run["scheduled"])
    if state == "pending":
        assert keys == PENDING_KEYS, f"pending run with {sorted(keys - PENDING_KEYS)}"
    elif state == "running":
        assert keys == PENDING_KEYS | CLAIM_KEYS, f"running run with keys {sorted(keys)}"
    else:
        assert RESOLVE_KEYS <= keys <= PENDING_KEYS | CLAIM_KEYS | RESOLVE_KEYS, f"resolved run keys {sorted(keys)}"
        # A run was claimed with all four claim fields or with none.
        assert not (keys & CLAIM_KEYS) or CLAIM_KEYS <= keys, f"partly claimed run {sorted(keys)}"
        expected = reason if reason in ("completed", "failed") else "exception"
        assert reason in EXCEPTION_REASONS | {"completed", "failed"}, reason
        assert state == expected, f"a {state} run resolved for {reason}"
        assert ts(run["resolved"]) >= ts(run.get("started", run["scheduled"])), "resolved before started"
        if reason in WORKER_REASONS or reason == "claim-expired":
            assert "started" in run, f"{reason} on a run no worker ever claimed"
        if reason == "claim-expired":
            assert ts(run["resolved"]) >= ts(run["takenUntil"]), "claim expired before its takenUntil"
        if reason == "deadline-exceeded":
            assert ts(run["resolved"]) >= deadline, "deadline-exceeded before the deadline"
    if "started" in run:
        assert ts(run["started"]) >= scheduled, "started before scheduled"
        assert ts(run["takenUntil"]) > ts(run["started"]), "taken until no later than started"
        # claimWork and claimTask refuse past the deadline.
        assert ts(run["started"]) < deadline, "a run was claimed at or after the deadline"
    if created == "exception":
        # Only cancelTask / the deadline of an unscheduled task add a run just to resolve it.
        assert run["runId"] == 0 and "started" not in run, run
        assert reason in ("canceled", "deadline-exceeded") and run["resolved"] == run["scheduled"], run
    if created == "scheduled":
        assert run["runId"] == 0, "only a task's first run is created by scheduling it"
    if created in RETRY_CREATED_AFTER:
        assert run["runId"] >= 1, run
    if scheduled >= deadline:
        # Nothing starts after the deadline: the only run that may be created then is the one
        # the deadline resolver adds to an unscheduled task to resolve it.
        assert created == "exception" and reason == "deadline-exceeded", (
            f"run {run['runId']} ({created}) was created at or after the deadline")


# --- invariants of one step -----------------------------------------------------------------

def check_step_json(before: dict, after: dict, retries: int, now: datetime | None = None) -> None:
    """How one call or timer may change a status. `now` (when exactly known) is the time
    of the change; it decides whether the deadline had passed."""
    old, new = before["runs"], after["runs"]
    assert len(old) <= len(new) <= len(old) + 1, f"runs went from {len(old)} to {len(new)} in one step"
    # Earlier runs are immutable; a resolved run never changes again.
    assert new[:max(len(old) - 1, 0)] == old[:-1], "an earlier run changed"
    if old and not unresolved(old[-1]):
        assert new[len(old) - 1] == old[-1], "a resolved run changed"
    if old and unresolved(old[-1]) and new[len(old) - 1] != old[-1]:
        was, now_run = old[-1], new[len(old) - 1]
        moves = (was["state"], "resolved" if now_run["state"] in RESOLVED_STATES else now_run["state"])
        assert moves in {("pending", "running"), ("running", "running"), ("pending", "resolved"),
                         ("running", "resolved")}, f"run {was['runId']} went {moves[0]} -> {now_run['state']}"
        # What a run already had stays; a reclaim (running -> running) moves takenUntil only.
        kept = [key for key in was if key != "state" and not (moves == ("running", "running") and key == "takenUntil")]
        assert {key: now_run.get(key) for key in kept} == {key: was[key] for key in kept}, (
            f"run {was['runId']} ({' -> '.join(moves)}) rewrote what it had")
        if moves == ("running", "running"):
            assert set(now_run) == set(was), "a reclaim added or removed fields"
    if len(new) > len(old):
        added = new[-1]
        if old:
            assert not unresolved(new[len(old) - 1]), "a run was added while another was unresolved"
        if added["reasonCreated"] in RETRY_CREATED_AFTER:
            assert before["retriesLeft"] > 0, "a retry run was added with no retries left"
            assert after["retriesLeft"] == before["retriesLeft"] - 1, "a retry did not use up one retry"
        elif added["reasonCreated"] == "rerun":
            assert after["retriesLeft"] == retries, "rerunTask did not reset retriesLeft"
        else:
            assert after["retriesLeft"] == before["retriesLeft"]
    else:
        assert after["retriesLeft"] == before["retriesLeft"], "retriesLeft changed without a new run"
    if before["state"] in RESOLVED_STATES and after["state"] not in RESOLVED_STATES:
        assert new[-1]["reasonCreated"] == "rerun", "a resolved task became unresolved without rerunTask"
    if now is not None and now >= ts(before["deadline"]) and after != before:
        # Past the deadline the only changes are resolutions: by the deadline resolver, by
        # the claim resolver or by the worker's own report. No claim, reclaim, schedule,
        # cancel or rerun, and no new pending run.
        grew = len(new) > len(old)
        assert after["state"] in RESOLVED_STATES, f"past the deadline the task went to {after['state']}"
        assert not grew or (not old and new[0]["reasonResolved"] == "deadline-exceeded"), (
            "a run was added after the deadline")


# --- the state machine over `lifecycle` ---------------------------------------------------------

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
DEFINITION = {"provisionerId": "prov", "workerType": "wt", "taskQueueId": "prov/wt", "schedulerId": "-",
              "projectId": "none", "taskGroupId": "TG", "priority": "lowest", "deadline": "", "expires": ""}
WORKER_RESOLUTIONS = ["completed", "failed", *WORKER_EXCEPTION_REASONS]

# Which run a call names: usually the latest, sometimes any id (earlier runs, unknown ones).
PICK = st.one_of(st.just(-1), st.just(-1), st.integers(0, 3))
# Time moves by a hair (boundaries), by seconds, or by up to half an hour; deadlines and
# takenUntil are also reached exactly by `wait_until`.
millis = st.one_of(st.integers(0, 3), st.integers(0, 90_000), st.integers(0, 90_000), st.integers(0, 30 * 60_000))
BOUNDARY = st.sampled_from(["takenUntil", "takenUntil", "takenUntil", "deadline"])
# Every worker report, the retryable ones (which add runs) twice as often.
REPORT = st.sampled_from(WORKER_RESOLUTIONS + ["worker-shutdown", "intermittent-task"])
CALLS = st.one_of(   # a call's weight is how often it is listed
    st.tuples(st.just("claim"), PICK),
    st.tuples(st.just("report"), PICK, REPORT),
    st.tuples(st.just("wait"), millis),
    st.tuples(st.just("wait_until"), BOUNDARY, st.integers(-1, 1)),
    st.tuples(st.just("claim_expiry_fires"), PICK),
    st.tuples(st.just("claim"), PICK),
    st.tuples(st.just("report"), PICK, REPORT),
    st.tuples(st.just("wait"), millis),
    st.tuples(st.just("wait_until"), BOUNDARY, st.integers(-1, 1)),
    st.tuples(st.just("claim_expiry_fires"), PICK),
    st.tuples(st.just("reclaim"), PICK, st.integers(1, 20 * 60_000)),
    st.tuples(st.just("reclaim"), PICK, st.integers(1, 20 * 60_000)),
    st.tuples(st.just("schedule")),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("rerun")),
    st.tuples(st.just("deadline_fires")),
)
# Mostly deadlines hours away (so calls have time to happen), sometimes seconds away.
DEADLINE_MS = st.one_of(st.integers(1, 5_000), *[st.integers(3600_000, 3 * 3600_000)] * 3)


class TaskLifecycle(RuleBasedStateMachine):
    """One task, a simulated clock, and every call and timer that can touch the task."""

    @initialize(retries=st.integers(0, 3),
                deadline_ms=DEADLINE_MS,
                claim_ms=st.integers(1, 20 * 60_000), scheduled=st.sampled_from([True, True, True, False]),
                prefill=st.sampled_from([0] * 8 + [lifecycle.MAX_RUNS - 2, lifecycle.MAX_RUNS - 1]))
    def create(self, retries, deadline_ms, claim_ms, scheduled, prefill):
        self.now = T0
        self.claim_timeout = timedelta(milliseconds=claim_ms)
        self.retries = retries
        deadline = T0 + timedelta(milliseconds=deadline_ms)
        self.status = TaskStatus(task_id="T", retries=retries, retries_left=retries, deadline=iso(deadline))
        # To reach the run cap within a short sequence, some tasks start with runs already
        # made by the transitions themselves (failed runs, each rerun), all at T0.
        for run_id in range(prefill):
            self.status = lifecycle.rerun(self.status, T0) if run_id else lifecycle.schedule(self.status, T0)
            self.status = lifecycle.claim(self.status, run_id, "wg", "w", T0, T0 + self.claim_timeout)
            self.status = lifecycle.resolve(self.status, run_id, ReasonResolved.FAILED, T0)
        if scheduled and not prefill:
            # createTask of a task without dependencies schedules it at once.
            self.status = lifecycle.schedule(self.status, T0)
        self.json = self.render()

    # -- helpers --

    def render(self) -> dict:
        rendered = render_status({**DEFINITION, "deadline": self.status.deadline}, self.status)
        # The latest run survives the JSON round trip storage puts it through (earlier
        # runs are checked to be unchanged since they were latest).
        if rendered["runs"]:
            assert Run.from_json(rendered["runs"][-1]).to_json() == rendered["runs"][-1]
        return rendered

    @property
    def deadline(self) -> datetime:
        return ts(self.status.deadline)

    @property
    def past_deadline(self) -> bool:
        return self.now >= self.deadline

    @property
    def runs(self) -> list[dict]:
        return self.json["runs"]

    @property
    def state(self) -> str:
        return task_state(self.runs)

    def last(self) -> dict | None:
        return self.runs[-1] if self.runs else None

    def run_id(self, pick: int) -> int:
        """-1 picks the latest run (the usual target); other values any id, even unknown ones."""
        return len(self.runs) - 1 if pick < 0 else pick

    def apply(self, action: str, transition, expect) -> dict:
        """Apply `transition` to the status; `expect` is `'noop'`, `'change'` or the QueueError
        subclass the call must raise. A refused call must leave the status exactly as it was."""
        before, before_json, fingerprint = self.status, self.json, hash(self.status)
        # Shown by --hypothesis-show-statistics: how often each outcome was exercised.
        event(f"{action}: {expect if isinstance(expect, str) else expect.__name__}")
        try:
            after = transition(before)
        except QueueError as error:
            assert isinstance(expect, type), f"{action} was refused ({error!r}) but is legal here"
            assert type(error) is expect, f"{action} raised {type(error).__name__}, expected {expect.__name__}"
            # Statuses are frozen, so "unchanged" means: same object, same contents (the
            # services rely on it to write nothing for a refused call).
            assert self.status is before and hash(before) == fingerprint, f"refused {action} changed the status"
            return before_json
        assert not isinstance(expect, type), f"{action} should have raised {expect.__name__}"
        assert isinstance(after, TaskStatus), f"{action} returned {after!r}"
        # A no-op hands back the very same object (the services skip the write on that).
        assert (expect == "noop") == (after is before), f"{action}: expected {expect}, got {after!r}"
        self.status = after
        self.json = self.render()
        check_step_json(before_json, self.json, self.retries, self.now)
        return before_json

    # -- the clock (steps too) --

    def wait(self, ms):
        self.now += timedelta(milliseconds=ms)

    def wait_until(self, boundary, offset_ms):
        """Land exactly on (or 1 ms around) the deadline or the latest run's takenUntil, where
        `<` and `<=` differ. (A plain `if`, not `assume`: a failed assume would discard the
        whole sequence.)"""
        run = self.last()
        if boundary == "deadline":
            moment = self.deadline
        elif run is not None and "takenUntil" in run:
            moment = ts(run["takenUntil"])
        else:
            return
        moment += timedelta(milliseconds=offset_ms)
        if moment > self.now:
            self.now = moment

    @rule(call=CALLS)
    def step(self, call):
        """One API call, timer firing or move of the clock, e.g. `('report', -1,
        'worker-shutdown')` or `('wait', 5000)`. A single rule, because hypothesis' swarm
        testing switches whole rules off for an example and would leave many sequences
        with, say, reports but no claims, or no clock."""
        name, *args = call
        getattr(self, name)(*args)

    # -- API calls --

    def schedule(self):
        expect = Conflict if self.past_deadline else ("noop" if self.runs else "change")
        self.apply("scheduleTask", lambda s: lifecycle.schedule(s, self.now), expect)
        if expect == "change":
            assert self.runs == [{"runId": 0, "state": "pending", "reasonCreated": "scheduled",
                                  "scheduled": iso(self.now)}]

    def claim(self, pick):
        run_id = self.run_id(pick)
        if not 0 <= run_id < len(self.runs):
            expect = NotFound
        elif run_id != len(self.runs) - 1 or self.runs[run_id]["state"] != "pending" or self.past_deadline:
            expect = Conflict
        else:
            expect = "change"
        taken_until = self.now + self.claim_timeout
        self.apply("claimTask", lambda s: lifecycle.claim(s, run_id, "wg", "worker", self.now, taken_until),
                   expect)
        if expect == "change":
            run = self.runs[run_id]
            assert (run["state"], run["started"], run["takenUntil"], run["workerId"]) == \
                   ("running", iso(self.now), iso(taken_until), "worker")

    def reclaim(self, pick, timeout_ms):
        run_id = self.run_id(pick)
        taken_until = self.now + timedelta(milliseconds=timeout_ms)
        if not 0 <= run_id < len(self.runs):
            expect = NotFound
        elif (run_id != len(self.runs) - 1 or self.runs[run_id]["state"] != "running"
              or ts(self.runs[run_id]["takenUntil"]) <= self.now or self.past_deadline):
            # A claim whose takenUntil has passed is lost, even before the expiry runs.
            expect = Conflict
        else:
            expect = "change"
        self.apply("reclaimTask", lambda s: lifecycle.reclaim(s, run_id, self.now, taken_until), expect)
        if expect == "change":
            assert self.runs[run_id]["takenUntil"] == iso(taken_until)

    def report(self, pick, reason):
        """reportCompleted / reportFailed / reportException with every worker reason."""
        run_id = self.run_id(pick)
        run = self.runs[run_id] if 0 <= run_id < len(self.runs) else None
        retries_left, count = self.status.retries_left, len(self.runs)
        expect = expected_report(run, reason)
        self.apply(f"report {reason}", lambda s: lifecycle.resolve(s, run_id, ReasonResolved(reason), self.now),
                   expect)
        if expect == "change":
            resolved = self.runs[run_id]
            assert (resolved["reasonResolved"], resolved["resolved"]) == (reason, iso(self.now))
            self.expect_retry(reason, retries_left, count)

    def expect_retry(self, reason: str, retries_left: int, count: int) -> None:
        """After a retryable exception a new pending run follows while retries (and runs) last,
        and only before the deadline (past it nothing could claim the run)."""
        retried = reason in RETRY_REASON_FOR and retries_left > 0 and count < lifecycle.MAX_RUNS
        retried = retried and not self.past_deadline
        if retried:
            assert self.runs[count:] == [{"runId": count, "state": "pending", "scheduled": iso(self.now),
                                          "reasonCreated": RETRY_REASON_FOR[reason]}]
        else:
            assert len(self.runs) == count, f"{reason} added a run {self.runs[count:]}"
            assert self.state == ("exception" if reason in EXCEPTION_REASONS else reason), self.state

    def cancel(self):
        if self.past_deadline:
            expect = Conflict
        else:
            expect = "noop" if self.state in RESOLVED_STATES else "change"
        self.apply("cancelTask", lambda s: lifecycle.cancel(s, self.now), expect)
        if expect == "change":
            assert self.state == "exception" and self.runs[-1]["reasonResolved"] == "canceled"
            assert self.runs[-1]["resolved"] == iso(self.now)

    def rerun(self):
        count = len(self.runs)
        if self.past_deadline:
            expect = Conflict
        elif self.state in ("pending", "running"):
            expect = "noop"
        elif count >= lifecycle.MAX_RUNS:
            expect = Conflict
        else:
            expect = "change"
        self.apply("rerunTask", lambda s: lifecycle.rerun(s, self.now), expect)
        if expect == "change":
            assert self.runs[count:] == [{"runId": count, "state": "pending", "reasonCreated": "rerun",
                                          "scheduled": iso(self.now)}]
            assert self.json["retriesLeft"] == self.retries

    # -- timers --

    def claim_expiry_fires(self, pick):
        """The claim resolver: it may fire for any run (stale index rows) at any time; it only
        acts on the running run whose takenUntil has passed."""
        run_id = self.run_id(pick)
        run = self.runs[run_id] if 0 <= run_id < len(self.runs) else None
        retries_left, count = self.status.retries_left, len(self.runs)
        due = (run is not None and run_id == count - 1 and run["state"] == "running"
               and ts(run["takenUntil"]) <= self.now)
        self.apply("claim expiry", lambda s: lifecycle.expire_claim(s, run_id, self.now),
                   "change" if due else "noop")
        if due:
            assert self.runs[run_id]["reasonResolved"] == "claim-expired"
            self.expect_retry("claim-expired", retries_left, count)

    def deadline_fires(self):
        """The deadline resolver, fired at any time: only past the deadline does it act, and
        then it resolves whatever is unresolved, without retry."""
        due = self.past_deadline and self.state not in RESOLVED_STATES
        count = len(self.runs)
        self.apply("deadline", lambda s: lifecycle.exceed_deadline(s, self.now), "change" if due else "noop")
        if due:
            assert len(self.runs) == max(count, 1) and self.runs[-1]["reasonResolved"] == "deadline-exceeded"
            assert self.runs[-1]["resolved"] == iso(self.now)

    @invariant()
    def status_is_legal(self):
        check_status_json(self.json, self.retries, lifecycle.MAX_RUNS)


TaskLifecycle.TestCase.settings = settings(
    max_examples=250, stateful_step_count=40, deadline=None, derandomize=False,
    suppress_health_check=[HealthCheck.too_slow])
test_task_lifecycle = TaskLifecycle.TestCase


# --- what the machine found once (fixed in lifecycle._resolve_latest), as concrete examples -------------------------------

@pytest.mark.parametrize("late_event", ["claim expiry", "worker-shutdown report", "intermittent-task report"])
def test_no_retry_run_is_added_after_the_deadline(late_event):
    """Found by the machine (shrunk): a task with retries left, claimed before its deadline,
    whose run ends for a retryable reason after the deadline but before the deadline
    resolver has run. Past the deadline nothing may be claimed, so a retry run could only
    sit pending until the deadline resolver resolves it (after a task-pending event and a
    spent retry); the run should end the task instead, as it does when no retries are left."""
    deadline = T0 + timedelta(minutes=1)
    status = TaskStatus(task_id="T", retries=1, retries_left=1, deadline=iso(deadline))
    status = lifecycle.schedule(status, T0)
    status = lifecycle.claim(status, 0, "wg", "worker", T0, T0 + timedelta(minutes=20))
    before = render_status({**DEFINITION, "deadline": status.deadline}, status)
    late = T0 + timedelta(minutes=30)       # past the deadline and past takenUntil
    if late_event == "claim expiry":
        after = lifecycle.expire_claim(status, 0, late)
    else:
        reason = late_event.removesuffix(" report")
        after = lifecycle.resolve(status, 0, ReasonResolved(reason), late)
    rendered = render_status({**DEFINITION, "deadline": after.deadline}, after)
    assert [run["state"] for run in rendered["runs"]] == ["exception"], rendered["runs"]
    assert rendered["state"] == "exception" and rendered["retriesLeft"] == 1
    check_step_json(before, rendered, retries=1, now=late)


def expected_report(run: dict | None, reason: str):
    """What reporting `reason` on `run` (as last seen) must do: reporting the same
    resolution again is answered as done; a pending or other resolved run conflicts; a
    running one changes (even after its takenUntil, until a sweep expires it)."""
    if run is None:
        return NotFound
    if run["state"] in RESOLVED_STATES:
        return "noop" if run["reasonResolved"] == reason else Conflict
    return Conflict if run["state"] == "pending" else "change"
