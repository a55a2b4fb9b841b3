"""Waking a pool's provisioner when tasks become pending there: nothing for a queue no pool
serves (and no storage read per task), one message for a burst, none for a full pool until
a worker leaves it, and again once a pass has begun."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from shared.domain.timestamps import utcnow
from shared.services.claims.work_signal import WorkSignal
from shared.services.worker_manager import wake_ups as wake_ups_module
from shared.services.worker_manager.wake_ups import WakeUps
from shared.domain.ids import new_slugid
from tests.conftest import eventually, make_task, memory_services, unique_prefix
from tests.memory_storage import MemoryAccount
from tests.providers.conftest import POOL_BODY

POOLS = {"proj/linux": "local", "proj/static": "static"}


class Reads:
    def __init__(self, pools: dict[str, str]) -> None:
        self.pools, self.count = dict(pools), 0

    def __call__(self) -> dict[str, str]:
        self.count += 1
        return dict(self.pools)


@pytest.fixture
def queue():
    return MemoryAccount(unique_prefix()).queue("wake-ups")


@pytest.fixture
def reads():
    return Reads(POOLS)


@pytest.fixture
def signal():
    return WorkSignal()


@pytest.fixture
def wake_ups(queue, reads, signal):
    return WakeUps(queue, reads, lambda provider_id: provider_id == "local", signal)


def messages(queue) -> list[dict]:
    time.sleep(0.2)   # the sender's thread
    received = queue.receive(32, hold=timedelta(seconds=60))
    return [message.body for message in received]


def test_a_queue_no_pool_serves_sends_nothing_and_reads_the_pools_once(wake_ups, queue, reads, signal):
    for _ in range(1000):
        signal.notify("other/queue", 1, made=[])
    signal.notify("proj/static", 1, made=[])   # static workers are started by people
    assert messages(queue) == [] and reads.count == 1


def test_a_burst_of_pending_tasks_is_one_wake_up(wake_ups, queue, signal):
    for _ in range(1000):
        signal.notify("proj/linux", 1, made=[])
    [body] = eventually(lambda: messages(queue), message="the wake-up")
    assert body["workerPoolId"] == "proj/linux" and body["requested"]
    assert messages(queue) == []


def test_a_pass_begun_after_the_wake_up_lets_the_next_task_wake_the_pool_again(wake_ups, queue, signal):
    signal.notify("proj/linux", 1, made=[])
    eventually(lambda: messages(queue), message="the first wake-up")
    wake_ups.pass_began("proj/linux", utcnow())
    signal.notify("proj/linux", 1, made=[])
    assert len(eventually(lambda: messages(queue), message="the second wake-up")) == 1


def test_a_full_pool_is_not_woken_until_a_worker_leaves_it(wake_ups, queue, signal):
    wake_ups.passed("proj/linux", full=True)
    signal.notify("proj/linux", 1, made=[])
    assert messages(queue) == []
    wake_ups.room_freed("proj/linux")
    signal.notify("proj/linux", 1, made=[])
    assert len(eventually(lambda: messages(queue), message="the wake-up")) == 1


def test_a_wake_up_not_answered_in_hold_seconds_is_sent_again(wake_ups, queue, signal, monkeypatch):
    monkeypatch.setattr(wake_ups_module, "HOLD", 0.1)
    signal.notify("proj/linux", 1, made=[])
    eventually(lambda: messages(queue), message="the first wake-up")
    time.sleep(0.15)   # its pass ran in another process, which this one never hears of
    signal.notify("proj/linux", 1, made=[])
    assert len(eventually(lambda: messages(queue), message="the second wake-up")) == 1


def test_pools_are_read_again_in_the_background_once_stale(wake_ups, queue, reads, signal, monkeypatch):
    monkeypatch.setattr(wake_ups_module, "REFRESH", 0.0)
    signal.notify("new/pool", 1, made=[])   # the first read, on this thread: no such pool
    reads.pools["new/pool"] = "local"       # created by another process
    signal.notify("new/pool", 1, made=[])   # stale: read again, in the background
    eventually(lambda: reads.count >= 2, message="a read in the background")
    signal.notify("new/pool", 1, made=[])
    assert [body["workerPoolId"] for body in eventually(lambda: messages(queue), message="the wake-up")] == \
        ["new/pool"]


def test_creating_tasks_for_a_pool_through_the_services_wakes_it_once():
    services = memory_services()
    wm = services.worker_manager
    wm.pools.create("proj/built", {**POOL_BODY, "config": {"maxCapacity": 2}}, utcnow(), by="tests")
    created = wm.wake_ups.messages
    created.receive(32, hold=timedelta(seconds=60))   # the pool's own wake-up
    wm.wake_ups.pass_began("proj/built", utcnow())
    for _ in range(50):
        services.task_calls.create(new_slugid(), make_task("proj/built"))
    assert [body["workerPoolId"] for body in eventually(lambda: messages(created), message="the wake-up")] == \
        ["proj/built"]
