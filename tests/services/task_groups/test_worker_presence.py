"""What the Queue itself knows of who serves a task queue (`SeenWorkers`), the watchdog's
fallback: the queue's workers and claims are read from every one of its buckets, and those of
a queue whose id extends it are not."""

from datetime import timedelta

from shared.domain.timestamps import parse_iso, to_iso
from shared.services.task_groups.worker_presence import SeenWorkers
from shared.storage.tables.claim_table import ClaimRow, ClaimTable, worker_partition
from shared.storage.tables.worker_table import WorkerRecord, WorkerTable
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

QUEUE = "prov/type"
NOW = parse_iso("2030-01-01T00:10:00.000Z")
SINCE = NOW - timedelta(minutes=5)


def seen(active: timedelta, quarantined: bool = False, queue: str = QUEUE, number: int = 0) -> WorkerRecord:
    at = to_iso(NOW - active)
    return WorkerRecord(queue, "wg", f"w{number}", at, at, to_iso(NOW + timedelta(days=1)),
                        to_iso(NOW + timedelta(hours=1)) if quarantined else "")


def tables():
    account = MemoryAccount(unique_prefix())
    return WorkerTable(account), ClaimTable(account)


def test_a_working_worker_in_any_bucket_serves_the_queue_beside_quarantined_ones():
    workers, claims = tables()
    for number in range(12):
        workers.insert(seen(timedelta(minutes=1), quarantined=number != 9, number=number))
    assert len({worker_partition(QUEUE, "wg", f"w{number}") for number in range(12)}) > 6
    presence = SeenWorkers(workers, claims).presence(QUEUE, SINCE, NOW)
    assert presence.served and presence.detail.startswith("worker wg/w9 claimed at")


def test_a_claim_alive_in_any_bucket_serves_the_queue_and_another_queues_does_not():
    workers, claims = tables()
    for number in range(6):
        workers.insert(seen(timedelta(minutes=1), quarantined=True, number=number))
    workers.insert(seen(timedelta(minutes=1), queue="prov/type2", number=7))
    presence = SeenWorkers(workers, claims).presence(QUEUE, SINCE, NOW)
    assert not presence.served and "(6 seen, all quarantined)" in presence.detail
    claims.add([ClaimRow("prov/type2", "other", 0, "wg", "w7", to_iso(NOW + timedelta(minutes=5)))])
    assert not SeenWorkers(workers, claims).presence(QUEUE, SINCE, NOW).served
    claims.add([ClaimRow(QUEUE, "task", 0, "wg", "w11", to_iso(NOW + timedelta(minutes=5)))])
    presence = SeenWorkers(workers, claims).presence(QUEUE, SINCE, NOW)
    assert presence.served and presence.detail.startswith("worker wg/w11 holds a claim until")


def test_workers_not_seen_lately_do_not_serve_the_queue():
    workers, claims = tables()
    for number in range(8):
        workers.insert(seen(timedelta(minutes=30), number=number))
    claims.add([ClaimRow(QUEUE, "done", 0, "wg", "w3", to_iso(NOW - timedelta(minutes=1)))])   # expired
    assert not SeenWorkers(workers, claims).presence(QUEUE, SINCE, NOW).served
