"""One transaction for many writers: threads of a process upserting rows of the same
partition at the same time share one round trip (group commit).

Many writes at once land in one partition: a fan-out schedules hundreds of tasks of one
queue, whose pending hints share a bucket; parallel createTask calls add deadline rows to
the same five minutes of the time index and dependency rows under the same required task;
workers claiming from one queue write their claim rows there. Each caller still returns
only once its rows are stored, as its own upsert would. A writer with no write of its
partition in flight sends at once (nothing waits for company); one that finds a write in
flight joins the next transaction of that partition, which its first joiner sends as soon
as the write ahead ends. So at most one transaction per partition runs and one fills,
holding at most 100 rows (Azure's limit; a writer that does not fit sends alone).

Rows are upserts (merged, as `upsert_entity` does), so two writes of the same row in one
transaction are merged into one, the later's values winning, as if sent in turn. A
transaction that storage refuses (one writer's bad row would fail the others') is sent
again writer by writer, so each gets its own outcome.
"""

from __future__ import annotations

from typing import Callable

from azure.data.tables import TableTransactionError

from shared.storage.patterns.rounds import Round, Rounds
from shared.storage.client.table import Table

MAX_ROWS = 100


class _Transaction(Round):
    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict] = {}     # RowKey -> the row, merged
        self.error: BaseException | None = None
        self.split = False                  # refused whole: each writer sends its own

    def join(self, rows: list[dict]) -> bool:
        """Merge `rows` in, if they fit (at most MAX_ROWS rows in all)."""
        if len(self.rows.keys() | {row["RowKey"] for row in rows}) > MAX_ROWS:
            return False
        for row in rows:
            self.rows[row["RowKey"]] = {**self.rows.get(row["RowKey"], {}), **row}
        return True


class SharedWrites:
    def __init__(self, send: Callable[[Table, list[dict]], None]) -> None:
        self._send = send                   # upserts rows of one partition in one request
        self._rounds = Rounds()

    def upsert(self, table: Table, rows: list[dict]) -> None:
        """Upsert `rows`, all of one partition, possibly with other writers' rows."""
        key = (id(table), rows[0]["PartitionKey"])
        mine, leads = self._rounds.join(key, _Transaction, lambda transaction: transaction.join(rows))
        if mine is None:
            self._send(table, rows)        # no room beside the others: alone, at once
            return
        if leads:
            self._rounds.lead(key, mine, lambda: self._commit(table, mine))
        else:
            mine.done.wait()
        if mine.split:
            self._send(table, rows)
        elif mine.error is not None:
            raise mine.error

    def _commit(self, table: Table, mine: _Transaction) -> None:
        try:
            self._send(table, list(mine.rows.values()))
        except TableTransactionError as error:
            mine.split = len(mine.rows) > 1
            mine.error = None if mine.split else error
        except BaseException as error:
            mine.error = error
