"""The HookLastFires table on Azurite (and in memory): a hook's fires newest first, a page at a
time; a scheduled fire recorded twice is one row; fires older than a year are dropped."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso
from shared.storage.client.account import StorageAccount
from shared.storage.tables.hook_fire_table import HookFireTable, LastFire
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

START = datetime(2031, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["azurite", "memory"])
def fires(request) -> HookFireTable:
    if request.param == "memory":
        return HookFireTable(MemoryAccount(unique_prefix()))
    return HookFireTable(StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix()))


def fire(moment: datetime, hook_id: str = "a/b", **changes) -> LastFire:
    return LastFire("g", hook_id, changes.pop("fired_by", "triggerHook"), changes.pop("task_id", new_slugid()),
                    to_iso(moment), changes.pop("result", "success"), **changes)


def test_fires_are_listed_newest_first_a_page_at_a_time(fires):
    made = [fire(START + timedelta(minutes=minute)) for minute in range(5)]
    for each in made:
        fires.record(each)
    fires.record(fire(START, hook_id="a"))                  # another hook's
    first, after = fires.page("g", "a/b", "", 2)
    second, after = fires.page("g", "a/b", after, 2)
    third, end = fires.page("g", "a/b", after, 2)
    assert [each.task_id for each in first + second + third] == [each.task_id for each in reversed(made)]
    assert end is None and len(third) == 1


def test_a_scheduled_fire_recorded_twice_is_one_row(fires):
    task_id = new_slugid()
    fires.record(fire(START + timedelta(seconds=3), fired_by="schedule", task_id=task_id, at=to_iso(START),
                      result="error", error="x" * 200_000))
    fires.record(fire(START + timedelta(seconds=9), fired_by="schedule", task_id=task_id, at=to_iso(START)))
    [only], _ = fires.page("g", "a/b", "", 10)
    assert (only.result, only.error, only.task_create_time) == ("success", "", to_iso(START + timedelta(seconds=9)))


def test_an_error_is_kept_up_to_taskclusters_length(fires):
    fires.record(fire(START, result="error", error="e" * 200_000))
    [kept], _ = fires.page("g", "a/b", "", 10)
    assert len(kept.error) == 128 * 1024


def test_fires_older_than_a_year_go_when_the_hook_fires_again_and_all_with_the_hook(fires):
    old = fire(START - timedelta(days=400))
    fires.record(old)
    fires.record(fire(START - timedelta(days=300)))
    fires.record(fire(START))
    kept, _ = fires.page("g", "a/b", "", 10)
    assert len(kept) == 2 and old.task_id not in {each.task_id for each in kept}
    fires.forget("g", "a/b")
    assert fires.page("g", "a/b", "", 10) == ([], None)
