"""The workers of a task queue, spread over its buckets: each read and conditional write
finds a worker's row in its bucket, and the queue's workers are listed in key order across
buckets (listWorkers' pages) and seen by the watchdog in every bucket."""

import pytest

from shared.storage.errors import ChangedSinceRead
from shared.storage.tables.claim_table import TABLE, worker_partition
from shared.storage.tables.worker_table import WorkerRecord, WorkerTable

QUEUE = "prov/type"
EARLY, DUE, LATER = "2029-01-01T00:00:00.000Z", "2030-01-01T00:00:00.000Z", "2031-01-01T00:00:00.000Z"


def worker(number: int, queue: str = QUEUE, active: str = DUE) -> WorkerRecord:
    return WorkerRecord(queue, "wg", f"w{number}", EARLY, active, LATER)


def test_a_queues_workers_land_in_several_partitions(account):
    workers = WorkerTable(account)
    for number in range(20):
        workers.insert(worker(number))
    stored = {row["PartitionKey"] for row in account.table(TABLE).query_entities("PartitionKey ne ''")}
    assert len(stored) > 8 and all(partition.startswith("prov%2Ftype~") for partition in stored)
    assert stored == {worker_partition(QUEUE, "wg", f"w{number}") for number in range(20)}


def test_a_workers_row_is_read_written_and_deleted_in_its_bucket(account):
    workers = WorkerTable(account)
    first = workers.insert(worker(3))
    saved = workers.save(WorkerRecord(QUEUE, "wg", "w3", EARLY, LATER, LATER, etag=first.etag))
    assert workers.load(QUEUE, "wg", "w3").last_date_active == LATER
    assert workers.load("prov/type2", "wg", "w3") is None
    with pytest.raises(ChangedSinceRead):
        workers.delete(first)                                    # changed since: kept
    workers.delete(saved)
    assert workers.load(QUEUE, "wg", "w3") is None


def test_workers_are_listed_in_key_order_across_buckets_a_page_at_a_time(account):
    workers = WorkerTable(account)
    for number in range(40):
        workers.insert(worker(number))
    workers.insert(worker(99, "prov/other"))
    workers.insert(worker(98, "prov/type2"))
    listed, after = [], ""
    while page := workers.page(QUEUE, after, 7):
        listed += [record.worker_id for record in page]
        after = f"{page[-1].worker_group}.{page[-1].worker_id}"
    assert listed == sorted(f"w{number}" for number in range(40))


def test_the_watchdog_sees_active_workers_of_every_bucket_and_no_other_queues(account):
    workers = WorkerTable(account)
    for number in range(24):
        workers.insert(worker(number, active=DUE if number % 3 else EARLY))
    workers.insert(worker(99, "prov/type2"))
    active = workers.active_since(QUEUE, DUE, 100)
    assert sorted(record.worker_id for record in active) == sorted(f"w{n}" for n in range(24) if n % 3)
    assert len({worker_partition(QUEUE, "wg", record.worker_id) for record in active}) > 4
    assert len(workers.active_since(QUEUE, DUE, 3)) == 3
