"""The Tasks table against Azurite: round trips, chunked definitions, conditional writes."""

import threading
from dataclasses import replace

import pytest

from shared.domain import lifecycle
from shared.domain.ids import new_slugid
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import utcnow
from shared.storage.client.account import OPERATIONS, StorageAccount
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.tables.task_table import NewTask, TaskTable

from tests.conftest import unique_prefix


@pytest.fixture
def table(azurite) -> TaskTable:
    return TaskTable(StorageAccount(azurite.connection_string, unique_prefix()))


def definition(task_id: str, payload: dict | None = None) -> dict:
    return {"provisionerId": "p", "workerType": "w", "taskQueueId": "p/w", "schedulerId": "-",
            "projectId": "none", "taskGroupId": task_id, "priority": "lowest", "retries": 3,
            "deadline": "2099-01-01T00:00:00.000Z", "expires": "2100-01-01T00:00:00.000Z",
            "payload": payload or {}}


def test_round_trip_with_a_definition_larger_than_one_column(table, task_id):
    big = definition(task_id, {"text": "é" * 10 + "x" * 100_000})
    table.insert(big, TaskStatus.new(task_id, big))
    record = table.load(task_id, with_definition=True)
    assert record.definition == big
    assert record.status == TaskStatus.new(task_id, big)
    assert table.load(task_id).definition is None  # the cheap read leaves the definition out


def test_insert_twice_is_refused(table, task_id):
    body = definition(task_id)
    table.insert(body, TaskStatus.new(task_id, body))
    with pytest.raises(AlreadyExists):
        table.insert(body, TaskStatus.new(task_id, body))


def test_a_stale_read_cannot_overwrite(table, task_id):
    body = definition(task_id)
    table.insert(body, TaskStatus.new(task_id, body))
    first, second = table.load(task_id), table.load(task_id)
    scheduled = lifecycle.schedule(first.status, utcnow())
    saved = table.save_status(first, scheduled)
    with pytest.raises(ChangedSinceRead):
        table.save_status(second, lifecycle.cancel(second.status, utcnow()))
    assert table.load(task_id).status == scheduled
    assert saved.etag != first.etag


def test_unknown_task_loads_as_none(table, task_id):
    assert table.load(task_id) is None


def test_the_row_last_written_is_remembered_as_stored(table, task_id):
    """After the insert and the clearing of its outbox, the version remembered is the row's
    current one (its ETag too), so a change can start from it without reading."""
    body = definition(task_id)
    inserted = table.insert(body, TaskStatus.new(task_id, body))
    assert table.last_written(task_id, with_definition=True) == inserted
    table.clear_outbox(task_id, [event.id for event in inserted.outbox], inserted.etag, inserted.outbox)
    remembered, stored = table.last_written(task_id), table.load(task_id, with_definition=True)
    assert (remembered.etag, remembered.outbox, remembered.definition) == (stored.etag, (), body)


def test_a_refused_write_forgets_the_row(table, task_id):
    body = definition(task_id)
    inserted = table.insert(body, TaskStatus.new(task_id, body))
    stale = replace(inserted, etag='W/"datetime\'2000-01-01T00%3A00%3A00.0000000Z\'"')
    with pytest.raises(ChangedSinceRead):
        table.save_status(stale, lifecycle.cancel(inserted.status, utcnow()))
    assert table.last_written(task_id) is None
    table.delete_many([task_id])
    assert table.last_written(task_id) is None


def _ids(prefix: str, count: int) -> list[str]:
    return [prefix + new_slugid()[len(prefix):] for _ in range(count)]


def test_tasks_created_together_take_a_transaction_per_table_and_partition(table):
    """A row's table is by its id's second character, its partition by the first."""
    ids = _ids("Ab", 4) + _ids("Cd", 2)
    tasks = [NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id))) for task_id in ids]
    before = OPERATIONS.value
    records = table.insert_many(tasks)
    assert OPERATIONS.value - before == 2
    for task_id, record in zip(ids, records):
        stored = table.load(task_id, with_definition=True)
        assert record.task_id == task_id and stored.etag == record.etag
        assert stored.definition == definition(task_id)
        assert stored.status == TaskStatus.new(task_id, definition(task_id))


def test_tasks_expiring_together_are_deleted_a_transaction_per_table_and_partition(table):
    ids = _ids("Gx", 5) + _ids("hy", 3)
    table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id))) for task_id in ids])
    before = OPERATIONS.value
    table.delete_many(ids)
    assert OPERATIONS.value - before == 2
    assert [table.load(task_id) for task_id in ids] == [None] * len(ids)
    table.delete_many(ids[:3])   # gone already: no error


def test_status_changes_are_saved_a_transaction_per_partition_and_a_stale_one_alone_is_refused(table):
    ids = _ids("Jq", 4) + _ids("kr", 3)
    records = table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id)))
                                 for task_id in ids])
    now = utcnow()
    before = OPERATIONS.value
    saved = table.save_statuses([(record, lifecycle.schedule(record.status, now)) for record in records[:4]])
    assert OPERATIONS.value - before == 1
    assert [table.load(task_id).status.state.value for task_id in ids[:4]] == ["pending"] * 4
    assert [record.etag for record in saved] == [table.load(task_id).etag for task_id in ids[:4]]
    stale = replace(records[5], etag=saved[0].etag)   # another row's version: refused
    outcomes = table.save_statuses([(record, lifecycle.schedule(record.status, now))
                                    for record in (records[4], stale, records[6])])
    assert isinstance(outcomes[1], ChangedSinceRead)
    assert [table.load(task_id).status.state.value for task_id in ids[4:]] == ["pending", "unscheduled", "pending"]


def test_tasks_of_one_partition_in_two_tables_take_a_transaction_each(table):
    ids = _ids("AA", 3) + _ids("AB", 2)   # second characters a table apart (see `task_table.TABLES`)
    tasks = [NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id))) for task_id in ids]
    before = OPERATIONS.value
    table.insert_many(tasks)
    assert OPERATIONS.value - before == 2
    before = OPERATIONS.value
    table.delete_many(ids)
    assert OPERATIONS.value - before == 2
    assert [table.load(task_id) for task_id in ids] == [None] * len(ids)


def test_each_transaction_of_status_changes_is_followed_up_as_soon_as_it_lands(table, monkeypatch):
    """A transaction that lands while an earlier one is still on its way is handed to `saved`
    at once: its tasks can be claimed from then on, and their events must be out first."""
    slow, quick = _ids("Mm", 2), _ids("Nn", 2)
    records = table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id)))
                                 for task_id in slow + quick])
    landed = threading.Event()
    real_chunk = table._save_chunk

    def save_chunk(chunk):
        if chunk[0][1].task_id in slow:
            assert landed.wait(10)   # held until the other transaction was followed up
        return real_chunk(chunk)
    monkeypatch.setattr(table, "_save_chunk", save_chunk)
    followed = []

    def saved(records):
        followed.append(sorted(record.task_id for record in records))
        landed.set()
    now = utcnow()
    table.save_statuses([(record, lifecycle.schedule(record.status, now)) for record in records], saved)
    assert followed == [sorted(quick), sorted(slow)]


def test_a_transaction_refused_for_a_row_that_exists_inserts_the_others_one_by_one(table):
    taken, *others = _ids("Ef", 3)
    first = definition(taken, {"first": True})
    table.insert(first, TaskStatus.new(taken, first))
    outcomes = table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id)))
                                  for task_id in [taken, *others]])
    assert isinstance(outcomes[0], AlreadyExists)
    assert [outcome.task_id for outcome in outcomes[1:]] == others
    assert table.load(taken, with_definition=True).definition == first
    assert all(table.load(task_id) is not None for task_id in others)


# A transaction of inserts or conditional updates that storage answers 500 OperationTimedOut
# after it landed is settled by the writeId of its rows, not sent again: sent again, it was
# refused for its own rows, the rows were written again one by one and refused too, and their
# events, stored by the first attempt, were settled as never stored (the next writer dropped
# them unpublished; found by the throttled SIGKILL suite: task-defined events missing).
def _throttled_table(azurite, throttling) -> tuple:
    proxy = throttling(1)
    return proxy, TaskTable(StorageAccount(proxy.connection_string(azurite.connection_string), unique_prefix()))


def _transaction(charge) -> bool:
    return charge.units > 1


def test_new_tasks_whose_transaction_timed_out_after_it_landed_keep_their_events(azurite, throttling):
    proxy, table = _throttled_table(azurite, throttling)
    ids = _ids("Tx", 3)
    proxy.throttle.arm("timeout", where=_transaction)
    table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id))) for task_id in ids])
    assert proxy.throttle.counts()["account"]["timed_out"] == 1
    for task_id in ids:
        stored = table.load(task_id).outbox
        assert stored and table.marks.unknown(stored) == list(stored)   # none published: none may count as out


def test_status_changes_whose_transaction_timed_out_after_it_landed_keep_their_events(azurite, throttling):
    proxy, table = _throttled_table(azurite, throttling)
    ids = _ids("Ty", 3)
    records = table.insert_many([NewTask(definition(task_id), TaskStatus.new(task_id, definition(task_id)))
                                 for task_id in ids])
    proxy.throttle.arm("timeout", where=_transaction)
    table.save_statuses([(record, lifecycle.schedule(record.status, utcnow())) for record in records])
    assert proxy.throttle.counts()["account"]["timed_out"] == 1
    for task_id in ids:
        stored = table.load(task_id)
        assert stored.status.state.value == "pending"
        assert table.marks.unknown(stored.outbox) == list(stored.outbox)
