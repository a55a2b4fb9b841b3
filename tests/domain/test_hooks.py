"""Firing hooks: the schedule stepped through with an injected clock, the fires' taskIds, the
role, and the JSON-e context of each kind of fire."""

from datetime import datetime, timedelta, timezone

import pytest

from shared.domain.errors import InvalidInput
from shared.domain.hooks import (advance, check_schedule, fire_context, fire_task_id, fires_between, hook_role,
                                 new_fire_key, next_fire, requested_task_id)
from shared.domain.ids import is_slugid

DAY = datetime(2026, 11, 30, tzinfo=timezone.utc)     # a Monday
SCHEDULE = ["0 0 */6 * * *", "0 30 9 * * 1-5", "0 0 12 * * *"]   # 12:00 twice: fires once
KEY = new_fire_key()


class Clock:
    """The present, stepped by the test."""

    def __init__(self, now: datetime) -> None:
        self.now = now


def sweep(clock: Clock, hook: dict, created: dict, fires: list, dies_at: datetime | None = None) -> None:
    """What the hooks timer does, with the clock injected: fire the due fire (the queue keeps
    one task per taskId: `created`), then move the hook on. A process that dies after firing
    the fire due at `dies_at` leaves the hook unmoved, so the next sweep fires it again."""
    due = hook["next"]
    if due is None or due > clock.now:
        return
    task_id = fire_task_id(KEY, "project", "nightly", due)
    fires.append(task_id)
    created.setdefault(task_id, due)
    if due != dies_at:
        hook["next"] = advance(SCHEDULE, due, clock.now)


def test_a_day_stepped_through_gives_exactly_the_expected_fires_and_a_restart_midway_no_duplicate():
    clock = Clock(DAY - timedelta(seconds=1))
    hook = {"next": next_fire(SCHEDULE, clock.now)}
    created: dict[str, datetime] = {}
    fires: list[str] = []
    dies_at = DAY + timedelta(hours=12)             # the first sweep to fire 12:00 dies before moving on
    while clock.now + timedelta(seconds=37) < DAY + timedelta(days=1):
        clock.now += timedelta(seconds=37)          # the timer's runs fall anywhere in a second
        sweep(clock, hook, created, fires, dies_at)
        if hook["next"] == dies_at and fires[-1] == fire_task_id(KEY, "project", "nightly", dies_at):
            dies_at = None                          # restarted: the next sweep fires 12:00 again
        sweep(clock, hook, created, fires)          # a timer that runs twice at once
    expected = [DAY + timedelta(hours=hours) for hours in (0, 6, 9.5, 12, 18)]
    assert sorted(created.values()) == expected     # exactly these, once each
    assert len(fires) == 6 and fires.count(fire_task_id(KEY, "project", "nightly", DAY + timedelta(hours=12))) == 2
    assert all(is_slugid(task_id) for task_id in created)


def test_a_fire_missed_while_down_is_made_up_once():
    hook = {"next": DAY + timedelta(hours=6)}
    created: dict[str, datetime] = {}
    sweep(Clock(DAY + timedelta(hours=19)), hook, created, [])  # down from 05:00 to 19:00
    assert list(created.values()) == [DAY + timedelta(hours=6)]
    assert hook["next"] == DAY + timedelta(days=1)             # 09:30, 12:00 and 18:00 are not made up


def test_fires_between_two_instants():
    assert fires_between(SCHEDULE, DAY, DAY + timedelta(hours=12)) == [
        DAY + timedelta(hours=6), DAY + timedelta(hours=9.5), DAY + timedelta(hours=12)]
    assert fires_between([], DAY, DAY + timedelta(days=1)) == [] and next_fire([], DAY) is None


def test_a_fires_task_id_is_the_same_for_the_same_hook_and_time_and_differs_otherwise():
    first = fire_task_id(KEY, "project", "nightly", DAY)
    assert first == fire_task_id(KEY, "project", "nightly", DAY) and is_slugid(first)
    others = {fire_task_id(KEY, "project", "nightly", DAY + timedelta(seconds=1)),
              fire_task_id(KEY, "project", "nightly2", DAY), fire_task_id(KEY, "project2", "nightly", DAY),
              fire_task_id(new_fire_key(), "project", "nightly", DAY)}
    assert first not in others and len(others) == 4
    assert all(is_slugid(fire_task_id(KEY, "g", "h", DAY + timedelta(minutes=minute))) for minute in range(500))


def test_a_schedule_is_checked_naming_the_pattern():
    assert len(check_schedule(["@daily", "0 0 * * *"], DAY)) == 2
    with pytest.raises(InvalidInput, match=r"^schedule\[1\]: .*out of range.* in '0 61 \* \* \* \*'"):
        check_schedule(["@daily", "0 61 * * * *"], DAY)


def test_the_role():
    assert hook_role("project-x", "builds/nightly") == "assume:hook-id:project-x/builds/nightly"


def test_each_kind_of_fire_has_taskclusters_context():
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert fire_context("schedule", "T", now) == {"firedBy": "schedule", "taskId": "T",
                                                 "now": "2026-01-02T03:04:05.000Z"}
    assert fire_context("triggerHook", "T", now, {"a": 1}, client_id="me") == {
        "firedBy": "triggerHook", "taskId": "T", "now": "2026-01-02T03:04:05.000Z", "payload": {"a": 1},
        "clientId": "me"}
    assert fire_context("triggerHookWithToken", "T", now, {}, client_id="ignored") == {
        "firedBy": "triggerHookWithToken", "taskId": "T", "now": "2026-01-02T03:04:05.000Z", "payload": {}}
    assert fire_context("pulseMessage", "T", now, {"status": {}})["payload"] == {"status": {}}
    with pytest.raises(ValueError):
        fire_context("cron", "T", now)


def test_a_trigger_may_choose_the_task_id():
    assert requested_task_id({"taskId": "fN1SbArXTPSVFNUvaOlinQ"}) == "fN1SbArXTPSVFNUvaOlinQ"
    assert requested_task_id({}) is None and requested_task_id({"taskId": ""}) is None
    with pytest.raises(InvalidInput, match=r"^payload\.taskId: "):
        requested_task_id({"taskId": "not a slug"})
