"""Reading rows: one that may not exist (`row_or_none`), and the first rows of a query,
whatever the pages.

Storage answers a query a page at a time: at most 1,000 rows, and possibly fewer, even none,
with a continuation (a query that ran out of time, or crossed a partition). Taking only the
first page would cut a listing short without a continuation token, or answer "no row left"
when there is one; these helpers take rows across pages until they have enough.

Threads asking the same query at the same time share one read of it (`shared_reads`).
"""

from __future__ import annotations

import sys
from itertools import islice

from azure.core.exceptions import ResourceNotFoundError

from shared.storage.patterns.shared_reads import SharedReads
from shared.storage.client.table import Table

MAX_PAGE = 1000
EVERY_ROW = sys.maxsize   # a limit that takes every row matching
_SHARED = SharedReads()


def row_or_none(table: Table, partition_key: str, row_key: str, select: list[str] | None = None):
    """The row (with its ETag in `metadata`), or None if there is none."""
    try:
        return table.get_entity(partition_key, row_key, select=select)
    except ResourceNotFoundError:
        return None


def first_rows(table: Table, query: str, parameters: dict, limit: int, select: list[str] | None = None) -> list:
    """Up to `limit` rows matching `query`, in key order, read after this call began; the
    rows may be those of a concurrent caller's identical query: read them, do not change them."""
    def read() -> list:
        rows = table.query_entities(query, parameters=parameters, results_per_page=min(limit, MAX_PAGE), select=select)
        return list(islice(rows, limit))
    key = (id(table), query, tuple(sorted(parameters.items())), limit, tuple(select or ()))
    return list(_SHARED.read(key, read))


def any_row(table: Table, query: str, parameters: dict) -> bool:
    return bool(first_rows(table, query, parameters, 1, select=["RowKey"]))
