"""Independent steps of a request run at once: results in order, errors after all are done."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.runtime.concurrent_steps import at_once

POOL = ThreadPoolExecutor(max_workers=4)


def test_results_come_in_the_order_of_the_steps_and_the_last_runs_in_this_thread():
    threads = []

    def step(value, pause):
        def run():
            time.sleep(pause)
            threads.append((value, threading.current_thread()))
            return value
        return run
    assert at_once(POOL, [step("a", 0.05), step("b", 0.0), step("c", 0.02)]) == ["a", "b", "c"]
    ran_in = dict(threads)
    assert ran_in["c"] is threading.current_thread()
    assert ran_in["a"] is not threading.current_thread() and ran_in["b"] is not threading.current_thread()
    assert at_once(POOL, []) == []


def test_an_error_is_raised_once_every_step_is_done():
    finished = threading.Event()

    def slow():
        time.sleep(0.1)
        finished.set()

    def failing():
        raise LookupError("the last step fails at once")
    with pytest.raises(LookupError):
        at_once(POOL, [slow, failing])
    assert finished.is_set()


def test_settle_returns_each_error_in_place_of_its_result():
    def failing():
        raise KeyError("x")
    outcomes = at_once(POOL, [failing, lambda: 2], settle=True)
    assert isinstance(outcomes[0], KeyError) and outcomes[1] == 2
