"""Timer triggers firing for real, from a small FunctionApp built here (the only way to get a
trigger object: `get_functions()` may be called once per app)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import azure.functions as func
import pytest

from devhost.ncrontab import Schedule
from devhost.timer_triggers import TimerRunner

from tests.devhost.conftest import eventually


@pytest.fixture
def run_timer():
    """`run_timer(app)` runs the app's one timer function as the host would; stopped after the test."""
    runners = []

    def run(app: func.FunctionApp) -> TimerRunner:
        [function] = app.get_functions()
        trigger = function.get_trigger()
        assert trigger.type == "timerTrigger"
        runner = TimerRunner(function.get_function_name(), function.get_user_function(),
                             Schedule(trigger.schedule), bool(trigger.run_on_startup), threading.Event())
        runner.start()
        runners.append(runner)
        return runner

    yield run
    for runner in runners:
        runner.stop.set()
        runner.thread.join(timeout=5)
        assert not runner.thread.is_alive(), "the timer thread did not stop"


def test_an_every_second_timer_fires_repeatedly_with_a_timer_request(run_timer):
    app, fired = func.FunctionApp(), []

    @app.timer_trigger(schedule="* * * * * *", arg_name="timer")
    def tick(timer: func.TimerRequest) -> None:
        fired.append((datetime.now(timezone.utc), timer))

    run_timer(app)

    eventually(lambda: len(fired) >= 3, timeout=8, message="three runs")
    assert all(isinstance(timer, func.TimerRequest) and timer.past_due is False for _, timer in fired)
    # One run per scheduled second: never two in the same second.
    seconds = [moment.replace(microsecond=0) for moment, _ in fired]
    assert seconds == sorted(set(seconds))


def test_run_on_startup_fires_at_once_even_when_the_schedule_is_far_away(run_timer):
    app, fired = func.FunctionApp(), []

    @app.timer_trigger(schedule="0 0 0 1 1 *", arg_name="timer", run_on_startup=True)
    def yearly(timer: func.TimerRequest) -> None:
        fired.append(timer)

    run_timer(app)
    eventually(lambda: fired, timeout=5, message="the startup run")
    assert len(fired) == 1 and fired[0].past_due is False


def test_a_failing_run_does_not_stop_the_schedule(run_timer):
    app, attempts = func.FunctionApp(), []

    @app.timer_trigger(schedule="* * * * * *", arg_name="timer")
    def failing(timer: func.TimerRequest) -> None:
        attempts.append(timer)
        raise RuntimeError("this run fails")

    runner = run_timer(app)
    eventually(lambda: len(attempts) >= 2, timeout=6, message="a run after a failed one")
    assert runner.thread.is_alive()


def test_stopping_ends_the_timer_thread_while_it_waits(run_timer):
    app = func.FunctionApp()

    @app.timer_trigger(schedule="0 0 0 1 1 *", arg_name="timer")
    def yearly(timer: func.TimerRequest) -> None:
        raise AssertionError("must not run")

    runner = run_timer(app)
    runner.stop.set()
    runner.thread.join(timeout=2)
    assert not runner.thread.is_alive()
