"""A record written whole as its row: inserted (refused if the row exists) or saved over the
row as it was read (refused if the row changed since), the outcome known even when storage's
answer was lost (`lost_responses.write`). For table adapters whose records carry their `etag`."""

from __future__ import annotations

from dataclasses import replace
from typing import Generic, TypeVar

from shared.storage.client import lost_responses
from shared.storage.client.table import Table

R = TypeVar("R")


class RecordWrites(Generic[R]):
    _table: Table

    def _entity(self, record: R) -> dict:
        raise NotImplementedError

    def insert(self, record: R) -> R:
        """AlreadyExists if the record has a row."""
        return self._written(record, None)

    def save(self, record: R) -> R:
        """Write over the row as read; ChangedSinceRead if it changed (or went) since."""
        return self._written(record, record.etag)

    def _written(self, record: R, etag: str | None) -> R:
        written = lost_responses.write(self._table, self._entity(record), etag)
        return replace(record, etag=written.get("etag"))
