"""The Tasks table against Azurite: round trips, chunked definitions, conditional writes."""

import pytest

from shared.domain import lifecycle
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import utcnow
from shared.storage.account import StorageAccount
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.task_table import TaskTable

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
