"""The throttle's budgets: Azure's targets divided by the scale, a second's worth of burst,
debt paid back at the rate, timeouts only near the limits; and its counts. Time is the
throttle's clock, moved by the test."""

from __future__ import annotations

import pytest

from devhost.throttling.costs import Charge
from devhost.throttling.targets import ACCOUNT_BUSY, PARTITION_BUSY, Throttle, hottest, rates


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def write(partition: str = "table Rows p", units: int = 1) -> Charge:
    return Charge("table", partition, units, True, True)


def served(throttle: Throttle, charge: Charge, times: int) -> int:
    return sum(throttle.admit(charge).refusal is None for _ in range(times))


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_the_targets_are_azures_divided_by_the_scale():
    assert rates(100) == {"partition_entities_per_s": 20, "account_requests_per_s": 200, "queue_messages_per_s": 20}
    with pytest.raises(ValueError):
        Throttle(0)


def test_a_partition_serves_a_seconds_worth_then_refuses_until_its_budget_refills(clock):
    throttle = Throttle(100, timeouts=0, clock=clock)   # 20 entities/s a partition
    assert served(throttle, write(), 30) == 20
    verdict = throttle.admit(write())
    assert verdict.refusal == PARTITION_BUSY
    assert served(throttle, write("table Rows other"), 5) == 5    # another partition has its own budget
    clock.now += 0.5
    assert served(throttle, write(), 30) == 10


def test_the_account_budget_spans_every_partition_and_service(clock):
    throttle = Throttle(1000, timeouts=0, clock=clock)  # 20 requests/s an account, 2 entities/s a partition
    charges = [write(f"table Rows p{n}") for n in range(15)] + [Charge("queue", f"queue q{n}", 1, True, True)
                                                                  for n in range(15)]
    outcomes = [throttle.admit(charge).refusal for charge in charges]
    assert outcomes.count(None) == 20 and set(outcomes) == {None, ACCOUNT_BUSY}


def test_a_transaction_beyond_the_budget_is_served_and_paid_back_before_anything_else(clock):
    throttle = Throttle(100, timeouts=0, clock=clock)   # 20 entities/s
    assert throttle.admit(write(units=100)).refusal is None
    clock.now += 3.75                                  # 80 in debt, 75 paid back: still below zero
    assert throttle.admit(write()).refusal == PARTITION_BUSY
    clock.now += 0.5
    assert throttle.admit(write()).refusal is None


def test_a_refused_request_draws_nothing(clock):
    throttle = Throttle(100, timeouts=0, clock=clock)
    served(throttle, write(), 20)
    assert served(throttle, write(), 1000) == 0
    clock.now += 0.25
    assert served(throttle, write(), 10) == 5


def test_rows_an_answer_carried_are_owed_by_its_partition(clock):
    throttle = Throttle(100, timeouts=0, clock=clock)
    query = Charge("table", "table Rows p", 1, True, False, reads_rows=True)
    assert throttle.admit(query).refusal is None
    throttle.owe(query, 29)                             # 30 rows read: 10 in debt
    assert throttle.admit(query).refusal == PARTITION_BUSY
    assert throttle.counts()["partitions"]["table Rows p"]["units"] == 30


def test_only_writes_near_a_limit_time_out(clock):
    throttle = Throttle(100, timeouts=1.0, clock=clock)   # every write near a limit
    read = Charge("table", "table Rows p", 1, True, False)
    outcomes = [throttle.admit(write()).time_out for _ in range(20)]
    assert outcomes[:9] == [False] * 9 and all(outcomes[10:])   # below half the budget from the 11th
    clock.now += 10
    assert [throttle.admit(read).time_out for _ in range(20)] == [False] * 20


def test_armed_failures_come_first_for_the_requests_they_name(clock):
    throttle = Throttle(1, timeouts=0, clock=clock)
    throttle.arm("timeout", where=lambda charge: charge.partition == "table Rows b")
    throttle.arm("busy")
    read = Charge("table", "table Rows a", 1, True, False)
    assert throttle.admit(read).refusal is None                          # not a write: passed over
    assert throttle.admit(write("table Rows b")).time_out is True       # the first armed that names it
    assert throttle.admit(write("table Rows a")).refusal == PARTITION_BUSY
    assert throttle.admit(write("table Rows a")) == throttle.admit(write("table Rows a"))   # none left
    with pytest.raises(ValueError):
        throttle.arm("slow")


def test_counts_by_partition_and_the_hottest(clock):
    throttle = Throttle(100, timeouts=0, clock=clock)
    served(throttle, write("table Rows hot"), 25)
    served(throttle, write("table Rows cold"), 5)
    throttle.admit(Charge("table", None, 1, False, True))
    throttle.admit(Charge("table", "table Rows (scan)", 30, False, False))   # no partition's
    clock.now += 2
    counts = throttle.counts()
    assert counts["partitions"]["table Rows hot"] == {"requests": 20, "units": 20, "refused": 5, "timed_out": 0}
    assert counts["account"] == {"requests": 27, "units": 56, "refused": 5, "timed_out": 0}
    assert counts["seconds"] == 2
    assert hottest(counts) == {"partition": "table Rows hot", "units": 20, "share": 0.8, "units_per_s": 10.0,
                               "refused": 5}
    throttle.reset()
    assert throttle.counts()["partitions"] == {} and hottest(throttle.counts()) is None


def test_transactions_may_be_kept_from_timing_out(clock):
    throttle = Throttle(100, timeouts=1.0, clock=clock, transaction_timeouts=False)
    transaction = Charge("table", "table Rows p", 5, True, True, transaction=True)
    outcomes = [throttle.admit(transaction).time_out for _ in range(3)]   # the last two near the limit
    assert outcomes == [False] * 3 and throttle.admit(write()).time_out is True
