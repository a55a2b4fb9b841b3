"""The Secrets table on Azurite (and on the in-memory account): a row per secret whatever
characters its name holds, names listed in pages, and a delete that loses to a set since."""

from __future__ import annotations

import pytest

from shared.storage.client.account import StorageAccount
from shared.storage.errors import ChangedSinceRead
from shared.storage.tables.secret_table import SecretTable, StoredSecret
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

LATER = "2031-01-01T00:00:00.000Z"


@pytest.fixture(params=["azurite", "memory"])
def table(request) -> SecretTable:
    if request.param == "memory":
        return SecretTable(MemoryAccount(unique_prefix()))
    return SecretTable(StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix()))


def secret(name: str, ciphertext: str = "c2VhbGVk", expires: str = LATER) -> StoredSecret:
    return StoredSecret(name, "k1", ciphertext, expires)


def test_any_printable_name_and_a_long_ciphertext_are_kept(table):
    names = ["a/b c", "x#y?z%w\\v", "~" * 1500, "project/ci/token"]
    for number, name in enumerate(names):
        table.save(secret(name, "Q" * (40_000 + number)))   # more than one column holds
    for number, name in enumerate(names):
        found = table.load(name)
        assert (found.name, found.key_id, found.ciphertext, found.expires) == (name, "k1", "Q" * (40_000 + number), LATER)
    assert table.load("missing") is None
    table.remove("a/b c")
    table.remove("a/b c")   # gone already: fine
    assert table.load("a/b c") is None


def test_names_are_listed_a_page_at_a_time(table):
    for name in ("b", "a/1", "c", "a/2", "d"):
        table.save(secret(name))
    pages, after = [], ""
    while True:
        found, after = table.names(after, 2)
        pages.append([name for name, _ in found])
        if after is None:
            break
    assert pages == [["a/1", "a/2"], ["b", "c"], ["d"]]


def test_a_delete_loses_to_a_set_since_it_was_read(table):
    table.save(secret("s"))
    read = table.load("s")
    table.save(secret("s", "bmV3"))
    with pytest.raises(ChangedSinceRead):
        table.delete(read)
    table.delete(table.load("s"))
    assert table.load("s") is None
