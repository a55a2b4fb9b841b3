"""Writes whose answer (or request) is lost on the way, through a proxy that drops them."""

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

from shared.domain import lifecycle
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import utcnow
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.errors import ChangedSinceRead
from shared.storage.client.table import Table
from shared.storage.client.lost_responses import WRITE_ID, unrepeatable
from shared.storage.tables.task_table import TaskTable

from tests.conftest import unique_prefix
from tests.lossy_proxy import LossyProxy
from tests.storage.tables.test_task_table import definition


@pytest.fixture
def proxy(azurite):
    proxy = LossyProxy(azurite.ports["table"])
    yield proxy
    proxy.close()


@pytest.fixture
def tables(azurite, proxy):
    """The same table twice: through the lossy proxy, and directly."""
    prefix = unique_prefix()
    lossy = StorageAccount(proxy.endpoint(azurite.connection_string), prefix).table("Rows")
    direct = StorageAccount(azurite.connection_string, prefix).table("Rows")
    return lossy, direct


def row(key: str, **columns) -> dict:
    return {"PartitionKey": "p", "RowKey": key, **columns}


@pytest.mark.parametrize("lost", ["answer", "request"])
def test_an_insert_knows_whether_it_landed(tables, proxy, lost):
    lossy, direct = tables
    proxy.lose(lost)
    lost_responses.insert(lossy, row("a", value=1))
    assert proxy.dropped == 1
    assert direct.get_entity("p", "a")["value"] == 1
    with pytest.raises(ResourceExistsError):
        lost_responses.insert(lossy, row("a", value=2))


def test_an_insert_beaten_while_its_request_was_lost_is_refused(tables, proxy):
    lossy, direct = tables
    proxy.lose("request", then=lambda: direct.create_entity(row("a", value="theirs")))
    with pytest.raises(ResourceExistsError):
        lost_responses.insert(lossy, row("a", value="ours"))
    assert direct.get_entity("p", "a")["value"] == "theirs"


@pytest.mark.parametrize("lost", ["answer", "request"])
def test_a_conditional_update_knows_whether_it_landed(tables, proxy, lost):
    lossy, direct = tables
    etag = lost_responses.insert(lossy, row("a", value=1))["etag"]
    proxy.lose(lost)
    new_etag = lost_responses.update(lossy, row("a", value=2), etag)["etag"]
    stored = direct.get_entity("p", "a")
    assert (stored["value"], stored.metadata["etag"]) == (2, new_etag)
    with pytest.raises(ResourceModifiedError):  # the old ETag really is stale now
        lost_responses.update(lossy, row("a", value=3), etag)


def test_an_update_beaten_while_its_request_was_lost_is_refused(tables, proxy):
    lossy, direct = tables
    etag = lost_responses.insert(lossy, row("a", value=1))["etag"]
    proxy.lose("request", then=lambda: direct.upsert_entity(row("a", value="theirs")))
    with pytest.raises(ResourceModifiedError):
        lost_responses.update(lossy, row("a", value="ours"), etag)
    assert direct.get_entity("p", "a")["value"] == "theirs"


def test_repeat_safe_requests_are_simply_sent_again(tables, proxy):
    lossy, direct = tables
    proxy.lose("answer")
    lossy.upsert_entity(row("a", value=1))
    proxy.lose("answer")
    lossy.submit_transaction([("upsert", row(key, value=key)) for key in "bcd"])
    proxy.lose("answer")
    lossy.delete_entity("p", "b")
    assert proxy.dropped == 3
    assert sorted(entity["RowKey"] for entity in direct.list_entities()) == ["a", "c", "d"]


def test_a_claim_whose_answer_is_lost_still_belongs_to_its_writer(azurite, proxy):
    """The case that matters: the write that makes a worker's claim is answered into the void."""
    tasks = TaskTable(StorageAccount(proxy.endpoint(azurite.connection_string), unique_prefix()))
    task = definition("TaskA")
    record = tasks.insert(task, lifecycle.schedule(TaskStatus.new("TaskA", task), utcnow()))
    now = utcnow()
    claimed = lifecycle.claim(record.status, 0, "group", "worker-1", now, now)
    proxy.lose("answer")
    saved = tasks.save_status(record, claimed)
    assert tasks.load("TaskA").status == claimed
    with pytest.raises(ChangedSinceRead):  # a second worker that read the same row loses
        tasks.save_status(record, lifecycle.claim(record.status, 0, "group", "worker-2", now, now))
    assert tasks.load("TaskA").etag == saved.etag


@pytest.mark.parametrize("method, url, if_match, expected", [
    ("POST", "http://h/acct/Rows", "*", True),             # insert
    ("PATCH", "http://h/acct/Rows(PartitionKey='p')", 'W/"1"', True),  # conditional merge
    ("PUT", "http://h/acct/Rows(PartitionKey='p')", 'W/"1"', True),    # conditional replace
    ("PATCH", "http://h/acct/Rows(PartitionKey='p')", "*", False),     # upsert
    ("POST", "http://h/acct/$batch", "*", False),
    ("POST", "http://h/acct/Tables", "*", False),
    ("DELETE", "http://h/acct/Rows(PartitionKey='p')", "*", False),
    ("GET", "http://h/acct/Rows()?$filter=x", "*", False),
])
def test_which_requests_are_unrepeatable(method, url, if_match, expected):
    assert unrepeatable(method, url, if_match) is expected


def test_rows_carry_the_id_of_their_last_write(tables):
    lossy, direct = tables
    lost_responses.insert(lossy, row("a"))
    first = direct.get_entity("p", "a")[WRITE_ID]
    lost_responses.update(lossy, row("a"), direct.get_entity("p", "a").metadata["etag"])
    assert direct.get_entity("p", "a")[WRITE_ID] not in ("", None, first)
    assert isinstance(lossy, Table)
