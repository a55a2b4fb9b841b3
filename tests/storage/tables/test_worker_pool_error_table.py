"""The WorkerPoolErrors table on Azurite (and on the in-memory account): a pool's errors
newest first, found by id, and the old ones dropped."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.tables.worker_pool_error_table import WorkerPoolErrorRecord, WorkerPoolErrorTable

POOL = "proj/linux"


@pytest.fixture
def table(account) -> WorkerPoolErrorTable:
    return WorkerPoolErrorTable(account, PublicationMarks(account))


def error(minutes_ago: int, pool: str = POOL) -> WorkerPoolErrorRecord:
    return WorkerPoolErrorRecord(pool, new_slugid(), to_iso(utcnow() - timedelta(minutes=minutes_ago)),
                                 "quota-exceeded", "Quota exceeded", f"{minutes_ago} minutes ago", {"n": minutes_ago})


def test_errors_are_listed_newest_first_a_page_at_a_time(table):
    for minutes in (30, 10, 20):
        table.insert(error(minutes))
    table.insert(error(5, pool="proj/other"))
    page = table.page(POOL, "", 2)
    assert [record.extra["n"] for _, record in page] == [10, 20]
    assert [record.extra["n"] for _, record in table.page(POOL, page[-1][0], 2)] == [30]


def test_one_error_is_found_by_its_id(table):
    wanted = table.insert(error(3))
    table.insert(error(4))
    [(_, found)] = table.page(POOL, "", 10, error_id=wanted.error_id)
    assert found.to_json() == wanted.to_json()


def test_errors_older_than_a_moment_are_dropped(table):
    for minutes in (1, 60, 120):
        table.insert(error(minutes))
    assert table.drop_older_than(POOL, to_iso(utcnow() - timedelta(minutes=30))) == 2
    assert [record.extra["n"] for _, record in table.page(POOL, "", 10)] == [1]
