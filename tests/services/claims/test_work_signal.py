"""Waking claimWork callers: one shared poll per queue and process, one caller per run."""

import threading
import time

from shared.services.claims.work_signal import WorkSignal


class Storage:
    """What the poll asks of storage: how many runs are pending (counted, settable)."""

    def __init__(self) -> None:
        self.pending = 0
        self.polls = 0

    def pending_runs(self, task_queue_id: str, limit: int) -> int:
        self.polls += 1
        return min(self.pending, limit)


def waiters(signal: WorkSignal, count: int, timeout: float, storage: Storage | None = None):
    """`count` callers waiting on one queue; a woken one takes a pending run if one is left."""
    woken: list[bool] = []
    lock = threading.Lock()

    def wait() -> None:
        found = signal.wait("q/a", timeout)
        with lock:
            woken.append(found)
            if found and storage and storage.pending:
                storage.pending -= 1
    threads = [threading.Thread(target=wait) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, woken


def test_many_waiting_callers_share_one_poll_and_one_is_woken_per_pending_run():
    storage = Storage()
    signal = WorkSignal(storage.pending_runs, interval=0.05)
    threads, woken = waiters(signal, 50, timeout=1.5, storage=storage)
    time.sleep(0.5)
    assert 3 <= storage.polls <= 12          # about one poll per interval, not one per caller
    storage.pending = 2                      # another process made two runs pending
    for thread in threads:
        thread.join()
    assert storage.pending == 0
    assert 2 <= woken.count(True) <= 4       # not all 50: as many as runs were seen


def test_work_made_in_this_process_wakes_a_caller_at_once_without_polling():
    storage = Storage()
    signal = WorkSignal(storage.pending_runs, interval=10)
    threads, woken = waiters(signal, 3, timeout=5)
    time.sleep(0.1)
    started = time.monotonic()
    signal.notify("q/a", 1)
    threads[0].join(timeout=1) if woken else None
    while not woken and time.monotonic() - started < 1:
        time.sleep(0.005)
    assert woken == [True]
    signal.notify("q/a")                     # everyone
    for thread in threads:
        thread.join()
    assert woken == [True, True, True]
    assert storage.polls == 0


def test_the_poll_stops_when_nobody_waits():
    storage = Storage()
    signal = WorkSignal(storage.pending_runs, interval=0.02)
    assert signal.wait("q/a", 0.1) is False
    time.sleep(0.1)
    polls = storage.polls
    time.sleep(0.1)
    assert storage.polls == polls
