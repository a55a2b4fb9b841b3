"""The yardstick: what Azurite does with the simplest requests the Queue is made of.

Single-entity inserts and point reads with azure-data-tables, from a few threads sharing
one TableClient (as the app's services shared one per table until they got their own
client, `shared/storage/client/table.py`; the yardstick stays the SDK's so that figures of different
days compare, and its client's CPU leaves Azurite a little less of the machine). Each entity gets its own
partition, like the Tasks table (PartitionKey = taskId), and carries a payload about the
size of a small task row, so the yardstick is not flattered by empty rows.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from azure.data.tables import TableClient, TableServiceClient

PAYLOAD = "x" * 1500
WARM_UP = 200   # untimed inserts first: a cold Azurite (Node's JIT) and cold connections ran ~40% slower


def add_arguments(parser) -> None:
    """The baseline's options, the same in every benchmark that measures one."""
    parser.add_argument("--baseline-ops", type=int, default=1000, help="inserts, then reads, for the baseline")
    parser.add_argument("--baseline-threads", type=int, default=4, help="client threads for the baseline")


def measure(connection: str, operations: int, threads: int) -> dict:
    """Inserts/s and point reads/s into a fresh table, which is deleted afterwards."""
    name = "benchraw" + uuid.uuid4().hex[:10]
    service = TableServiceClient.from_connection_string(connection)
    client: TableClient = service.create_table(name)
    keys = [uuid.uuid4().hex for _ in range(operations)]
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            _timed(pool, lambda key: client.create_entity(_entity(key)), [uuid.uuid4().hex for _ in range(WARM_UP)])
            insert_seconds = _timed(pool, lambda key: client.create_entity(_entity(key)), keys)
            read_seconds = _timed(pool, lambda key: client.get_entity(key, "row"), keys)
    finally:
        service.delete_table(name)
    return {
        "operations": operations,
        "threads": threads,
        "entity_bytes": len(PAYLOAD),
        "inserts_per_s": round(operations / insert_seconds, 1),
        "reads_per_s": round(operations / read_seconds, 1),
        "insert_seconds": round(insert_seconds, 3),
        "read_seconds": round(read_seconds, 3),
    }


def _entity(key: str) -> dict:
    return {"PartitionKey": key, "RowKey": "row", "payload": PAYLOAD, "state": "pending", "runs": 0}


def _timed(pool: ThreadPoolExecutor, call, keys: list[str]) -> float:
    started = time.perf_counter()
    for _ in pool.map(call, keys):  # consuming the results re-raises the first failure
        pass
    return time.perf_counter() - started
