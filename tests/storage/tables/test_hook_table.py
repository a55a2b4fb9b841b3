"""The Hooks table on Azurite (and on the in-memory account the service tests use): a hook's
row written conditionally, a group's hooks one partition, a hookId with `/`, and a group's
row that outlives no hook and is never lost to a removal racing a creation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.storage.client.account import StorageAccount
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.tables import hook_table
from shared.storage.tables.hook_table import HookRecord, HookTable
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

DEFINITION = {"hookGroupId": "g", "metadata": {"name": "n"}, "task": {"payload": {"x": "y" * 40_000}}}


@pytest.fixture(params=["azurite", "memory"])
def table(request) -> HookTable:
    if request.param == "memory":
        return HookTable(MemoryAccount(unique_prefix()))
    return HookTable(StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix()))


def hook(hook_id: str, group: str = "g", **changes) -> HookRecord:
    return HookRecord(group, hook_id, {**DEFINITION, "hookId": hook_id}, "k:sealed-token", "k:sealed-key",
                      **changes)


def test_a_hook_row_is_written_once_then_only_over_the_version_read(table):
    saved = table.insert(hook("a/b", next_fire="2031-03-01T00:00:00.000Z"))
    with pytest.raises(AlreadyExists):
        table.insert(hook("a/b"))
    read = table.get("g", "a/b")
    assert read.definition == saved.definition and read.next_fire == "2031-03-01T00:00:00.000Z"
    assert read.trigger_token == "k:sealed-token" and read.key == "g/a/b"
    moved = table.save(replace(read, next_fire="2031-03-01T01:00:00.000Z"))
    with pytest.raises(ChangedSinceRead):
        table.save(replace(read, next_fire="2031-03-01T02:00:00.000Z"))
    with pytest.raises(ChangedSinceRead):
        table.delete(read)
    table.delete(moved)
    assert table.get("g", "a/b") is None


def test_a_groups_hooks_are_its_partition(table):
    for hook_id in ("one", "two", "x/y"):
        table.insert(hook(hook_id))
    table.insert(hook("other", group="g2"))
    assert [record.hook_id for record in table.hooks("g")] == ["one", "two", "x/y"]
    assert table.hooks("nothing") == []


def test_a_group_row_goes_with_its_last_hook_and_comes_back_with_a_new_one(table):
    table.touch_group("g")
    first = table.insert(hook("one"))
    table.drop_group_if_empty("g")
    assert table.groups() == ["g"]                        # it has a hook
    table.delete(first)
    table.drop_group_if_empty("g")
    assert table.groups() == []
    table.touch_group("g")
    table.insert(hook("two"))
    table.touch_group("g")
    assert table.groups() == ["g"]


def test_a_removal_that_found_the_group_empty_keeps_a_row_touched_since(table, monkeypatch):
    """The remover reads the group row's version, then finds no hook; a creator touches the
    row and writes its hook meanwhile: the remover's delete is refused."""
    table.touch_group("g")
    real_any = hook_table.any_row

    def creator_meanwhile(*args):
        empty = real_any(*args)
        table.touch_group("g")
        table.insert(hook("late"))
        return empty
    monkeypatch.setattr(hook_table, "any_row", creator_meanwhile)
    table.drop_group_if_empty("g")
    assert table.groups() == ["g"] and [record.hook_id for record in table.hooks("g")] == ["late"]
