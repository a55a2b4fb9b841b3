"""Scheduled hooks through a real host whose hooks read an injected clock (HOOKS_CLOCK_FILE):
a day stepped through in half hours gives exactly the expected fires, a host killed midway
and started again makes none twice, and fires missed while the host was down are made up
once. Checked with the official Hooks and Queue clients."""

from __future__ import annotations

import os
import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from shared.domain.timestamps import parse_iso, to_iso
from tests.api.hooks_fixtures import GROUP, SETTINGS, hook_definition, hooks_client, new_queue
from tests.conftest import eventually, restart_server, start_server

START = datetime(2031, 3, 1, tzinfo=timezone.utc)
HOUR, HALF_HOUR = timedelta(hours=1), timedelta(minutes=30)


def set_clock(path: Path, moment: datetime) -> None:
    """Move the hooks' present (a whole file at once: the host may read it at any moment)."""
    path.with_suffix(".next").write_text(to_iso(moment))
    os.replace(path.with_suffix(".next"), path)


@pytest.fixture
def clock_file(tmp_path) -> Path:
    path = tmp_path / "clock"
    set_clock(path, START - HALF_HOUR)
    return path


@pytest.fixture
def clocked_server(azurite, tmp_path, clock_file):
    server = start_server(azurite, tmp_path, **SETTINGS, HOOKS_CLOCK_FILE=str(clock_file))
    yield server
    server.stop()


def all_fires(hooks, hook_id: str) -> list[dict]:
    fires, token = [], None
    while True:
        try:
            answer = hooks.listLastFires(GROUP, hook_id, query={"continuationToken": token} if token else {})
        except Exception as error:   # 404 until the first fire
            if getattr(error, "status_code", None) == 404 and not fires:
                return []
            raise
        fires += answer["lastFires"]
        token = answer.get("continuationToken")
        if not token:
            return fires


def fired(hooks, hook_id: str, count: int, log: Path | None = None) -> list[dict]:
    """The hook's fires once there are `count`; failing, says what the host's log said of hooks last."""
    def told() -> str:
        lines = [line for line in log.read_text(errors="replace").splitlines() if "hook" in line] if log else []
        return f"{count} fires (host log, its last lines about hooks: {lines[-12:]})"
    return eventually(lambda: len(found := all_fires(hooks, hook_id)) >= count and found, timeout=30, message=told)


@pytest.mark.slow
def test_a_day_gives_each_fire_once_across_a_host_killed_midway(clocked_server, clock_file):
    hooks, queue = hooks_client(clocked_server), clocked_server.client()
    task_queue_id = new_queue()
    # Every hour, and every six hours (overlapping: 00:00, 06:00, 12:00 and 18:00 fire once).
    hooks.createHook(GROUP, "hourly", hook_definition(task_queue_id, schedule=["0 0 * * * *", "0 0 */6 * * *"]))
    assert hooks.getHookStatus(GROUP, "hourly")["nextScheduledDate"] == to_iso(START)

    for step in range(1, 49):                          # 00:00, 00:30, ..., 23:30
        now = START - HALF_HOUR + step * HALF_HOUR
        set_clock(clock_file, now)
        expected = now.hour + 1
        if step == 25:                                 # 12:00: the host dies while the fire may be made
            time.sleep(random.uniform(0.2, 1.5))
            clocked_server.stop(sig_kill=True)
            restart_server(clocked_server)
        if now.minute == 0:
            assert len(fired(hooks, "hourly", expected, clocked_server.log_path)) == expected

    set_clock(clock_file, START + 24 * HOUR - timedelta(seconds=1))
    time.sleep(2.5)                                    # two runs of the timer: nothing more is due
    fires = all_fires(hooks, "hourly")
    assert len(fires) == 24 and {fire["result"] for fire in fires} == {"success"}
    assert {fire["firedBy"] for fire in fires} == {"schedule"}
    times = sorted(parse_iso(fire["taskCreateTime"]) for fire in fires)
    assert all(START + hour * HOUR <= at < START + hour * HOUR + HALF_HOUR for hour, at in enumerate(times))
    task_ids = {fire["taskId"] for fire in fires}
    assert len(task_ids) == 24
    pending = queue.listPendingTasks(task_queue_id)["tasks"]
    assert {entry["taskId"] for entry in pending} == task_ids          # one task per fire, no other
    assert {entry["task"]["payload"]["firedBy"] for entry in pending} == {"schedule"}
    assert hooks.getHookStatus(GROUP, "hourly")["nextScheduledDate"] == to_iso(START + 24 * HOUR)


@pytest.mark.slow
def test_fires_missed_while_the_host_was_down_are_made_up_once(clocked_server, clock_file):
    hooks = hooks_client(clocked_server)
    hooks.createHook(GROUP, "missed", hook_definition(new_queue(), schedule=["0 0 * * * *"]))
    set_clock(clock_file, START + timedelta(seconds=10))
    fired(hooks, "missed", 1)

    clocked_server.stop()
    set_clock(clock_file, START + 5 * HOUR + timedelta(minutes=10))   # 01:00 to 05:00 missed
    restart_server(clocked_server)
    fires = fired(hooks, "missed", 2)
    assert parse_iso(fires[0]["taskCreateTime"]) == START + 5 * HOUR + timedelta(minutes=10)
    assert hooks.getHookStatus(GROUP, "missed")["nextScheduledDate"] == to_iso(START + 6 * HOUR)
    set_clock(clock_file, START + 5 * HOUR + timedelta(minutes=50))
    time.sleep(2.5)
    assert len(all_fires(hooks, "missed")) == 2                        # made up once, not five times
    set_clock(clock_file, START + 6 * HOUR)
    assert len(fired(hooks, "missed", 3)) == 3
