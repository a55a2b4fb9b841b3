"""Whether a lifecycle costs more as storage fills, and whose cost that is: sequential
lifecycles against the real local host while the tables a lifecycle touches hold more and
more rows of other work, with the CPU time each process spent per lifecycle.

    python -m bench.table_size [--sizes 0,50000,150000] [--tables Tasks,...] [--lifecycles 300] [--group-per-task]

Before each measured block, each of those tables (by default all of Tasks, TaskGroups,
PendingTasks, Workers) is filled up to the size given with rows of partitions no lifecycle
reads (a hundred rows a transaction), and so is the task expiry index (`expires`: the items
of tasks that finished and expire within a year, as a deployment that ran that many holds).
Tasks is filled with rows of other tasks, where task rows go (spread over its tables and
partitions by their ids, see `task_table`): a lifecycle's task shares its partition with
some of them, as it would in a deployment that ran that many.
The host's CPU per lifecycle is the product's own cost; Azurite's, the storage emulator's:
Table Storage's cost per operation does not grow with a table, Azurite's does where it
walks one (see bench/README, "What bounds the figures here").
"""

from __future__ import annotations

import argparse
import string
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from devhost.azurite import Azurite
from shared.domain.ids import SLUGID_CHARACTERS, new_slugid
from shared.domain.timestamps import to_iso
from shared.services.wiring import DAY
from shared.storage.client.account import StorageAccount
from shared.storage.tables.task_table import row_keys, task_tables
from shared.storage.patterns.time_index import TimeIndex

from bench import local_host
from bench.memory import CpuClock, group_pids, per_task_ms
from bench.report import progress
from bench.sequential import _lifecycles, add_block_options

TASKS = "Tasks"
NICE_FIRST = string.ascii_uppercase + "abcdef"   # the first characters of the ids clients make (`slugid.nice`)
EXPIRY_INDEX = "expires"   # the task expiry index (see `task_expiry`), filled through its own code
TABLES = (TASKS, "TaskGroups", "PendingTasks", "Workers", EXPIRY_INDEX)
FILLER = "bench-filler~"   # sorts after every slugid and queue name a lifecycle reads
ROWS_PER_PARTITION = 1000
YEAR_SECONDS = 365 * 24 * 3600
PADDING = "x" * 400        # about the size of a small row of the Queue's


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.table_size", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0,50000,150000",
                        help="rows of other work in each table before each block (ascending; default 0,50000,150000)")
    parser.add_argument("--tables", default=",".join(TABLES),
                        help=f"the tables filled (default {','.join(TABLES)})")
    add_block_options(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    tables = args.tables.split(",")
    results = []
    with Azurite() as azurite, tempfile.TemporaryDirectory() as log_dir:
        with local_host.running(azurite, Path(log_dir), progress) as server:
            account = StorageAccount(azurite.connection_string, server.env["QUEUE_TABLE_PREFIX"])
            client = server.client()
            _lifecycles(client, args.lifecycles, "warm-up (not measured)", group_per_task=args.group_per_task)
            processes = {"host": [server.process.pid], "Azurite": group_pids(azurite.process.pid)}
            filled = 0
            for size in sizes:
                _fill(account, tables, filled, size)
                filled = size
                clock = CpuClock(processes)
                done = _lifecycles(client, args.lifecycles, f"{size:,} rows of other work in each table",
                                   group_per_task=args.group_per_task)
                spent = per_task_ms(clock.lap(), done["lifecycles"])
                results.append((size, done["lifecycles"] / done["seconds"], spent))
    print(f"\nrows of other work in each of {', '.join(tables)}; CPU ms per lifecycle"
          f" ({'a group per task' if args.group_per_task else 'one group'}, {args.lifecycles} lifecycles a block)")
    print(f"{'rows':>10} {'lifecycles/s':>13} {'host':>8} {'Azurite':>8}")
    for size, rate, spent in results:
        print(f"{size:>10,} {rate:>13.2f} {spent['host']:>8.2f} {spent['Azurite']:>8.2f}")
    return 0


def _fill(account: StorageAccount, tables: list[str], start: int, end: int) -> None:
    """Rows `start` to `end` of other work in each table, a transaction of 100 at a time."""
    if end <= start:
        return
    began = time.perf_counter()
    chunks = [(table, first) for table in tables for first in range(start, end, 100)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda chunk: _fill_chunk(account, *chunk, min(chunk[1] + 100, end)), chunks))
    progress(f"filled to {end:,} rows a table in {time.perf_counter() - began:.1f} s")


def _fill_chunk(account: StorageAccount, table: str, first: int, last: int) -> None:
    if table == EXPIRY_INDEX:
        soon = datetime.now(timezone.utc) + timedelta(days=1)
        TimeIndex(account, EXPIRY_INDEX, bucket=DAY).add(
            [(to_iso(soon + timedelta(seconds=number * 97 % YEAR_SECONDS)), f"task.{FILLER}{number:09d}")
             for number in range(first, last)])
        return
    if table == TASKS:
        _fill_tasks(account, first, last)
        return
    partition = f"{FILLER}{first // ROWS_PER_PARTITION:06d}"
    account.table(table).submit_transaction([
        ("upsert", {"PartitionKey": partition, "RowKey": f"{number:09d}", "padding": PADDING})
        for number in range(first, last)])


def _fill_tasks(account: StorageAccount, first: int, last: int) -> None:
    """Rows of other tasks, whose ids share their first two characters (so one table and
    partition: one transaction), the chunks taking those characters in turn."""
    chunk = first // 100
    prefix = NICE_FIRST[chunk % len(NICE_FIRST)] + SLUGID_CHARACTERS[chunk // len(NICE_FIRST) % len(SLUGID_CHARACTERS)]
    ids = [prefix + new_slugid()[2:] for _ in range(first, last)]
    task_tables(account).of(ids[0]).submit_transaction([
        ("upsert", {**row_keys(task_id), "padding": PADDING}) for task_id in ids])


if __name__ == "__main__":
    sys.exit(main())
