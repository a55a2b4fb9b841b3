"""Writes whose answer (or request) is lost on the way, through a proxy that drops them."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.domain import lifecycle
from shared.domain.runs import ReasonResolved
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import utcnow
from shared.storage.patterns import batches
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.errors import ChangedSinceRead
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.client.table import Table
from shared.storage.client.lost_responses import SUPERSEDED, WRITE_ID, repeatable, unrepeatable
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
    ("POST", "http://h/acct/Tables", "*", False),
    ("DELETE", "http://h/acct/Rows(PartitionKey='p')", "*", False),
    ("DELETE", "http://h/acct/Rows(PartitionKey='p')", 'W/"1"', False),  # sent again: it finds the row gone
    ("GET", "http://h/acct/Rows()?$filter=x", "*", False),
])
def test_which_requests_are_unrepeatable(method, url, if_match, expected):
    assert unrepeatable(method, url, if_match) is expected


@pytest.mark.parametrize("kinds, expected", [
    (["upsert", "delete"], True), (["delete"], True),
    (["upsert", "create"], False), (["delete", "update"], False), (["create"], False)])
def test_which_transactions_are_repeatable(kinds, expected):
    assert repeatable([(kind, row(str(n))) for n, kind in enumerate(kinds)]) is expected


def updated(key: str, etag: str, **columns) -> tuple:
    return "update", row(key, **columns), {"etag": etag, "match_condition": MatchConditions.IfNotModified,
                                           "mode": UpdateMode.MERGE}


@pytest.mark.parametrize("lost", ["answer", "request"])
def test_a_transaction_of_creates_and_updates_knows_whether_it_landed(tables, proxy, lost):
    lossy, direct = tables
    etag = direct.create_entity(row("a", value=1))["etag"]
    direct.create_entity(row("gone"))
    proxy.lose(lost)
    answers = lossy.submit_transaction([updated("a", etag, value=2), ("create", row("b", value=1)),
                                        ("upsert", row("c")), ("delete", row("gone"))])
    assert proxy.dropped == 1
    stored = {entity["RowKey"]: entity for entity in direct.list_entities()}
    assert {key: entity.get("value") for key, entity in stored.items()} == {"a": 2, "b": 1, "c": None}
    assert [answer.get("etag") for answer in answers] == [stored["a"].metadata["etag"], stored["b"].metadata["etag"],
                                                          stored["c"].metadata["etag"], None]
    assert len({entity[WRITE_ID] for entity in stored.values()}) == 1   # one id for the whole transaction


def test_a_transaction_beaten_while_its_request_was_lost_is_refused(tables, proxy):
    lossy, direct = tables
    proxy.lose("request", then=lambda: direct.create_entity(row("b", value="theirs")))
    with pytest.raises(TableTransactionError):
        lossy.submit_transaction([("create", row("a", value="ours")), ("create", row("b", value="ours"))])
    assert [(entity["RowKey"], entity["value"]) for entity in direct.list_entities()] == [("b", "theirs")]


def test_a_settled_transaction_answers_no_etag_of_a_row_changed_since_by_another(tables, proxy):
    """Landed, its answer lost, and one of its rows changed by another writer before it is
    looked for: that row's answer is an ETag no row has, so its writer's next conditional
    write from it is refused and reads the row again."""
    lossy, direct = tables

    def theirs() -> None:   # a writer of its own writeId, as every conditional writer here
        lost_responses.update(direct, row("b", value="theirs"), direct.get_entity("p", "b").metadata["etag"])
    proxy.lose("answer", then=theirs)
    answers = lossy.submit_transaction([("create", row("a", value="ours")), ("create", row("b", value="ours"))])
    assert answers[0]["etag"] == direct.get_entity("p", "a").metadata["etag"] and answers[1]["etag"] == SUPERSEDED
    with pytest.raises(ResourceModifiedError):
        lossy.update_entity(row("b", value="again"), etag=SUPERSEDED, match_condition=MatchConditions.IfNotModified)


def test_rows_carry_the_id_of_their_last_write(tables):
    lossy, direct = tables
    lost_responses.insert(lossy, row("a"))
    first = direct.get_entity("p", "a")[WRITE_ID]
    lost_responses.update(lossy, row("a"), direct.get_entity("p", "a").metadata["etag"])
    assert direct.get_entity("p", "a")[WRITE_ID] not in ("", None, first)
    assert isinstance(lossy, Table)


# -- Azure's answers near its limits, from the throttling proxy (devhost.throttling) ---------

@pytest.fixture
def throttled(azurite, throttling):
    """The proxy (no limit that bites: failures come when armed), and the same table through
    it and directly."""
    proxy = throttling(1)
    prefix = unique_prefix()
    return (proxy, StorageAccount(proxy.connection_string(azurite.connection_string), prefix).table("Rows"),
            StorageAccount(azurite.connection_string, prefix).table("Rows"))


def timed_out(proxy) -> int:
    return proxy.throttle.counts()["account"]["timed_out"]


def test_an_insert_or_update_that_timed_out_after_it_landed_knows_it_landed(throttled):
    proxy, table, direct = throttled
    proxy.throttle.arm("timeout")
    etag = lost_responses.insert(table, row("a", value=1))["etag"]
    proxy.throttle.arm("timeout")
    new_etag = lost_responses.update(table, row("a", value=2), etag)["etag"]
    assert timed_out(proxy) == 2
    stored = direct.get_entity("p", "a")
    assert (stored["value"], stored.metadata["etag"]) == (2, new_etag)


def test_a_transaction_that_timed_out_after_it_landed_is_settled_not_sent_again(throttled):
    proxy, table, direct = throttled
    etag = table.submit_transaction([("create", row("a", value=1)), ("create", row("b", value=1))])[0]["etag"]
    proxy.throttle.reset()
    proxy.throttle.arm("timeout", where=lambda charge: charge.units > 1)
    answers = table.submit_transaction([updated("a", etag, value=2), ("create", row("c", value=2))])
    assert timed_out(proxy) == 1
    assert proxy.throttle.counts()["partitions"][f"table {table.table_name} p"]["requests"] == 2   # it, and one look
    assert [direct.get_entity("p", key).metadata["etag"] for key in "ac"] == [answer["etag"] for answer in answers]


def test_writes_safe_to_repeat_that_timed_out_after_they_landed_are_sent_again(throttled):
    proxy, table, direct = throttled
    etag = lost_responses.insert(table, row("gone"))["etag"]
    for write in (lambda: table.upsert_entity(row("a", value=1)),
                  lambda: table.submit_transaction([("upsert", row(key)) for key in "bc"]),
                  lambda: batches.delete_if_unchanged(table, "p", "gone", etag, "gone")):
        proxy.throttle.arm("timeout")
        write()
    assert timed_out(proxy) == 3
    assert sorted(entity["RowKey"] for entity in direct.list_entities()) == ["a", "b", "c"]


def test_an_insert_refused_as_busy_is_sent_again_and_lands_once(throttled):
    proxy, table, direct = throttled
    for _ in range(3):
        proxy.throttle.arm("busy")
    lost_responses.insert(table, row("a", value=1))
    assert proxy.throttle.counts()["account"]["refused"] == 3
    assert [entity["value"] for entity in direct.list_entities()] == [1]


def test_a_claim_that_timed_out_after_it_landed_still_belongs_to_its_writer(azurite, throttling):
    proxy = throttling(1)
    tasks = TaskTable(StorageAccount(proxy.connection_string(azurite.connection_string), unique_prefix()))
    task = definition("TaskA")
    record = tasks.insert(task, lifecycle.schedule(TaskStatus.new("TaskA", task), utcnow()))
    now = utcnow()
    claimed = lifecycle.claim(record.status, 0, "group", "worker-1", now, now)
    proxy.throttle.arm("timeout")
    saved = tasks.save_status(record, claimed)
    assert timed_out(proxy) == 1 and tasks.load("TaskA").status == claimed
    with pytest.raises(ChangedSinceRead):
        tasks.save_status(record, lifecycle.claim(record.status, 0, "group", "worker-2", now, now))
    assert tasks.load("TaskA").etag == saved.etag


def test_writers_beyond_a_partitions_target_all_get_their_answer(azurite, throttling):
    """20 writers at once on one partition whose target is 10 entities/s: refused again and
    again, each backs off with jitter and gets its answer, later."""
    proxy = throttling(200)
    table = StorageAccount(proxy.connection_string(azurite.connection_string), unique_prefix()).table("Rows")
    proxy.throttle.reset()
    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(lambda n: lost_responses.insert(table, row(f"r{n}", n=n)), range(20)))
        list(pool.map(lambda n: table.upsert_entity(row(f"u{n}", n=n)), range(20)))
    assert len(list(table.query_entities("PartitionKey eq 'p'"))) == 40
    assert proxy.throttle.counts()["partitions"][f"table {table.table_name} p"]["refused"] > 0


def test_an_update_changed_by_another_writer_before_its_lost_answer_is_looked_into_may_have_landed(tables, proxy):
    """Its row no longer bears its writeId, whether it never landed or landed and was written
    over: the refusal says it may have landed (a plain refusal does not)."""
    lossy, direct = tables
    etag = lost_responses.insert(lossy, row("a", value=1))["etag"]
    proxy.lose("answer", then=lambda: lost_responses.update(direct, row("a", value="theirs"),
                                                            direct.get_entity("p", "a").metadata["etag"]))
    with pytest.raises(ResourceModifiedError) as refused:
        lost_responses.update(lossy, row("a", value="ours"), etag)
    assert lost_responses.maybe_landed(refused.value)
    with pytest.raises(ResourceModifiedError) as plain:
        lost_responses.update(lossy, row("a", value="again"), etag)
    assert not lost_responses.maybe_landed(plain.value)


def test_events_of_a_change_written_over_before_its_lost_answer_is_looked_into_are_not_dropped(azurite, proxy):
    """The claim resolver's change landed, its answer was lost, and a worker's claim and
    resolution changed the task before the resolver looked: the resolver cannot tell its change
    from one never made, so its events (which the worker's writes carried over) are neither
    taken for never stored nor for published: they stay open until their row is looked at,
    and are published from it then."""
    prefix = unique_prefix()
    resolver_marks = PublicationMarks(StorageAccount(proxy.endpoint(azurite.connection_string), prefix))
    resolver = TaskTable(StorageAccount(proxy.endpoint(azurite.connection_string), prefix), marks=resolver_marks)
    worker = TaskTable(StorageAccount(azurite.connection_string, prefix))
    task, now = definition("TaskA"), utcnow()
    record = resolver.insert(task, lifecycle.claim(lifecycle.schedule(TaskStatus.new("TaskA", task), now), 0,
                                                   "group", "worker-1", now, now))
    resolver_marks.settled(record.outbox)

    def claimed_and_completed_meanwhile() -> None:
        current = worker.load("TaskA")
        claimed = worker.save_status(current, lifecycle.claim(current.status, 1, "group", "worker-2", now, now))
        worker.save_status(claimed, lifecycle.resolve(claimed.status, 1, ReasonResolved.COMPLETED, now))
    proxy.lose("answer", then=claimed_and_completed_meanwhile)
    with pytest.raises(ChangedSinceRead):
        resolver.save_status(record, lifecycle.expire_claim(record.status, 0, now))
    expired = [event for event in worker.load("TaskA").outbox if event.writer == resolver_marks.writer]
    assert [event.exchange for event in expired] == ["task-exception", "task-pending"]   # run 0's, then run 1's (a retry)
    assert not any(resolver_marks.covered(event) for event in expired)   # not taken for out
    assert all(resolver_marks.mine_open(event) for event in expired)      # looked for once unsure
