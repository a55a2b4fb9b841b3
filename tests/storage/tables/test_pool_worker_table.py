"""The PoolWorkers table on Azurite (and on the in-memory account the service tests use):
workers written conditionally with their outboxes, listed by state and group, and the
provisioning row that lets one pass at a time record new workers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.domain.timestamps import to_iso, utcnow
from shared.domain.worker_manager_events import WORKER_REQUESTED, worker_changed
from shared.domain.workers import WorkerState
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.tables.pool_worker_table import PoolWorkerRecord, PoolWorkerTable

POOL = "proj/linux"


@pytest.fixture
def table(account) -> PoolWorkerTable:
    return PoolWorkerTable(account, PublicationMarks(account))


def worker(worker_id: str, state: WorkerState = WorkerState.REQUESTED, group: str = "local",
           pool: str = POOL, **fields) -> PoolWorkerRecord:
    now = to_iso(utcnow())
    return PoolWorkerRecord(pool, group, worker_id, "local", state, 1, now, now, now, now, **fields)


def test_a_worker_is_read_back_as_written_with_its_provider_data_and_token(table):
    token = {"workerPoolId": POOL, "workerGroup": "local", "workerId": "w1", "digest": "ab" * 32,
             "expires": to_iso(utcnow()), "used": False}
    table.insert(worker("w1", provider_data={"pid": 12, "startTicks": 34}, token=token))
    loaded = table.load(POOL, "local", "w1")
    assert (loaded.state, loaded.provider_data, loaded.token) == (WorkerState.REQUESTED, {"pid": 12, "startTicks": 34},
                                                                  token)
    assert table.load(POOL, "local", "w2") is None
    with pytest.raises(AlreadyExists):
        table.insert(worker("w1"))


def test_a_write_from_a_stale_read_is_refused(table):
    first = table.insert(worker("w1"))
    saved = table.save(replace(first, state=WorkerState.RUNNING))
    with pytest.raises(ChangedSinceRead):
        table.save(replace(first, state=WorkerState.STOPPING))
    assert table.load(POOL, "local", "w1").state is WorkerState.RUNNING and saved.etag != first.etag


def test_a_workers_events_are_kept_in_its_row_until_published(table):
    now = to_iso(utcnow())
    event = worker_changed(WORKER_REQUESTED, POOL, "local", "local", "w1", 1, now)
    saved = table.insert(worker("w1", outbox=(event,)))
    assert [e.id for e in saved.outbox] == [event.id] and saved.outbox[0].writer == table.marks.writer
    stored, etag = table.load_outbox(saved.key)
    assert [e.id for e in stored] == [event.id] and etag == saved.etag
    table.clear_outbox(saved.key, [event.id], etag)
    assert table.load_outbox(saved.key)[0] == ()


def test_listing_a_pools_workers_by_page_state_and_group(table):
    for index, state in enumerate([WorkerState.RUNNING, WorkerState.STOPPED, WorkerState.RUNNING]):
        table.insert(worker(f"w{index}", state))
    table.insert(worker("x", group="other"))
    table.insert(worker("elsewhere", pool="proj/other"))
    table.save_provisioning(table.provisioning(POOL))   # the provisioning row is no worker
    assert [w.worker_id for w in table.page(POOL, "", 10)] == ["w0", "w1", "w2", "x"]
    assert [w.worker_id for w in table.page(POOL, "local.w0", 2)] == ["w1", "w2"]
    assert [w.worker_id for w in table.page(POOL, "", 10, state="running")] == ["w0", "w2"]
    assert [w.worker_id for w in table.page(POOL, "", 10, worker_group="other")] == ["x"]
    assert {w.worker_id for w in table.all(POOL, frozenset({WorkerState.RUNNING, WorkerState.REQUESTED}))} == \
        {"w0", "w2", "x"}


def test_the_first_provisioning_row_is_written_once(table):
    empty = table.provisioning(POOL)
    assert empty.etag is None and empty.pass_began == ""
    table.save_provisioning(replace(empty, pass_began="2026-01-01T00:00:00.000Z"))
    with pytest.raises(ChangedSinceRead):   # another pass read the row absent too
        table.save_provisioning(replace(empty, pass_began="2026-01-01T00:00:01.000Z"))
    assert table.provisioning(POOL).pass_began == "2026-01-01T00:00:00.000Z"


def test_workers_are_recorded_only_by_the_pass_that_holds_the_provisioning_row(table):
    mine = table.save_provisioning(replace(table.provisioning(POOL), pass_began="2026-01-01T00:00:00.000Z"))
    theirs = table.save_provisioning(replace(table.provisioning(POOL), pass_began="2026-01-01T00:00:01.000Z"))
    with pytest.raises(ChangedSinceRead):
        table.record_requested(mine, [worker("late-1"), worker("late-2")])
    assert table.all(POOL) == []   # all or nothing: none of the late pass's workers
    state, recorded = table.record_requested(theirs, [worker("w1"), worker("w2")])
    assert [w.worker_id for w in table.all(POOL)] == ["w1", "w2"]
    assert all(w.etag == table.load(POOL, "local", w.worker_id).etag for w in recorded)
    assert state.etag == table.provisioning(POOL).etag and state.pass_began == "2026-01-01T00:00:01.000Z"
