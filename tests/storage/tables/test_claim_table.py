"""A task queue's claim bookkeeping spread over its workers' buckets: each worker's row and
claims share a partition (one transaction for a claimWork), the workers of a busy queue use
many, and every reader (count, the claim resolver's sweep, the watchdog's look, a worker's
runs, listClaimedTasks' pages) finds the rows of every bucket and of no other queue."""

from collections import Counter

from shared.storage.client.account import OPERATIONS
from shared.storage.tables.claim_table import TABLE, WORKER_BUCKETS, ClaimRow, ClaimTable, worker_partition
from shared.storage.tables.worker_table import WorkerRecord, WorkerTable

QUEUE = "prov/type"
DUE, LATER, SWEEP = "2030-01-01T00:00:00.000Z", "2031-01-01T00:00:00.000Z", "2030-06-01T00:00:00.000Z"


def spread_claims(claims: ClaimTable) -> list[ClaimRow]:
    """32 claims of 32 workers of QUEUE, every other one due at SWEEP; and claims of queues
    whose ids begin alike."""
    rows = [ClaimRow(QUEUE, f"t{n:02d}", 0, "wg", f"w{n}", DUE if n % 2 else LATER) for n in range(32)]
    claims.add(rows)
    claims.add([ClaimRow("prov/other", "x", 0, "wg", "w1", DUE), ClaimRow("prov/type2", "y", 0, "wg", "w1", LATER)])
    return rows


def test_a_queues_workers_are_spread_over_its_buckets_each_with_its_claims():
    partitions = Counter(worker_partition(QUEUE, "wg", f"w{number}") for number in range(160))
    assert set(partitions) == {f"prov%2Ftype~{chosen}" for chosen in WORKER_BUCKETS}
    assert max(partitions.values()) < 30                   # about 10 each: no bucket takes the queue
    assert worker_partition(QUEUE, "wg", "w1") == ClaimRow(QUEUE, "task", 0, "wg", "w1").partition
    assert worker_partition(QUEUE, "wg", "w1") == worker_partition(QUEUE, "wg", "w1")   # stable


def test_a_claimwork_writes_its_claims_and_its_workers_row_in_one_transaction(account):
    workers, claims = WorkerTable(account), ClaimTable(account)
    written = workers.insert(WorkerRecord(QUEUE, "wg", "w1", DUE, DUE, LATER))
    before = OPERATIONS.value
    answer = claims.add([ClaimRow(QUEUE, f"t{n}", 0, "wg", "w1", DUE) for n in range(3)],
                        beside=workers.update_operation(written))
    assert OPERATIONS.value - before == 1 and answer["etag"]
    assert claims.held_by(QUEUE, "wg", "w1") == [("t0", 0), ("t1", 0), ("t2", 0)]
    stored = {row["PartitionKey"] for row in account.table(TABLE).query_entities("PartitionKey ne ''")}
    assert stored == {worker_partition(QUEUE, "wg", "w1")}


def test_every_reader_finds_the_claims_of_every_bucket_and_no_other_queues(account):
    claims = ClaimTable(account)
    rows = spread_claims(claims)
    assert len({row.partition for row in rows}) > 8
    assert claims.count(QUEUE) == 32 and claims.count("prov/other") == 1 and claims.count("prov/type2") == 1
    due = claims.due(SWEEP, 100)                              # the claim resolver's sweep: every queue
    assert sorted((row.task_queue_id, row.task_id) for row in due) == \
        [("prov/other", "x")] + [(QUEUE, f"t{n:02d}") for n in range(1, 32, 2)]
    live = claims.live(QUEUE, SWEEP, 100)                     # the watchdog's look: the queue's buckets
    assert sorted(row.task_id for row in live) == [f"t{n:02d}" for n in range(0, 32, 2)]
    assert claims.held_by(QUEUE, "wg", "w7") == [("t07", 0)]
    claims.remove([row for row in due if row.task_queue_id == QUEUE])
    assert claims.count(QUEUE) == 16 and [row.task_queue_id for row in claims.due(SWEEP, 100)] == ["prov/other"]


def test_a_moved_or_removed_claim_is_found_in_its_workers_bucket(account):
    claims = ClaimTable(account)
    rows = spread_claims(claims)
    claims.move(rows[1], LATER)
    claims.remove_soon(rows[2:4])
    assert claims.flush_removals() == 2
    assert sorted(row.task_id for row in claims.due(SWEEP, 100) if row.task_queue_id == QUEUE) == \
        [f"t{n:02d}" for n in range(5, 32, 2)]
    assert claims.count(QUEUE) == 30


def test_claims_are_listed_in_task_id_order_across_buckets_a_page_at_a_time(account):
    claims = ClaimTable(account)
    rows = spread_claims(claims)
    listed, after = [], ""
    while page := claims.page(QUEUE, after, 5):
        listed += [(row.task_id, row.worker_id) for row in page]
        after = page[-1].row_key
    assert listed == [(row.task_id, row.worker_id) for row in rows]
