"""The WorkerPools table on Azurite (and on the in-memory account): pools read back as
written, a config longer than one column, conditional writes and deletes, and listings in
id order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.domain.timestamps import utcnow
from shared.domain.worker_pools import WorkerPool
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.tables.worker_pool_table import WorkerPoolRecord, WorkerPoolTable

BODY = {"providerId": "local", "description": "builds", "owner": "me@example.com", "emailOnError": False,
        "config": {"maxCapacity": 3, "workerConfig": {"idleTimeoutSecs": 5}}}


@pytest.fixture
def table(account) -> WorkerPoolTable:
    return WorkerPoolTable(account, PublicationMarks(account))


def pool(worker_pool_id: str = "proj/linux", **body) -> WorkerPool:
    return WorkerPool.create(worker_pool_id, {**BODY, **body}, utcnow())


def test_a_pool_is_read_back_as_written_even_with_a_long_config(table):
    long_config = {"maxCapacity": 3, "workerConfig": {"notes": "x" * 50_000}}
    written = table.insert(WorkerPoolRecord(pool(config=long_config)))
    loaded = table.load("proj/linux")
    assert loaded.pool.to_json() == written.pool.to_json() and loaded.etag == written.etag
    assert loaded.pool.config["workerConfig"]["notes"] == "x" * 50_000
    assert table.load("proj/other") is None
    with pytest.raises(AlreadyExists):
        table.insert(WorkerPoolRecord(pool()))


def test_writes_and_deletes_from_a_stale_read_are_refused(table):
    first = table.insert(WorkerPoolRecord(pool()))
    updated = table.save(replace(first, pool=first.pool.updated({**BODY, "providerId": "static", "config": {}},
                                                                 utcnow())))
    assert table.load("proj/linux").pool.previous_provider_ids == ("local",)
    with pytest.raises(ChangedSinceRead):
        table.save(first)
    with pytest.raises(ChangedSinceRead):
        table.delete(first)
    table.delete(updated)
    assert table.load("proj/linux") is None


def test_pools_are_listed_in_id_order_a_page_at_a_time(table):
    for pool_id in ("b/x", "a-b/x", "a/y", "a/x"):
        table.insert(WorkerPoolRecord(pool(pool_id)))
    # By provisionerId, then workerType: "a/..." before "a-b/..."
    assert [r.pool.worker_pool_id for r in table.page("", 10)] == ["a/x", "a/y", "a-b/x", "b/x"]
    assert [r.pool.worker_pool_id for r in table.page("a/y", 2)] == ["a-b/x", "b/x"]
    assert table.ids() == {"a-b/x": "local", "a/x": "local", "a/y": "local", "b/x": "local"}
