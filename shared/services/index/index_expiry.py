"""Index entries and namespaces deleted once their `expires` has passed (Taskcluster's index
expires both), by the expiration timer.

Each insert indexes its entry and the namespaces above it in the time index, before it writes
them, all at the midnight after the entry expires (a namespace's expiry, see
`domain.index.namespace_expiry`: so one insert's items share a day and are one write). When
an item comes due its row is read again: replaced or extended since, it is indexed anew at
its current expiry; lapsed, it is deleted if unchanged since read. A namespace lives at least
as long as every entry below it, so it lapses only once they have.
"""

from __future__ import annotations

from shared.domain.index import IndexEntry, Namespace, ancestors, namespace_expiry
from shared.services.sweeps.activity_expiry import ExpiringRows
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.index_table import NAMESPACE, TASK, IndexTable

KEY_LIMIT = 400   # characters of a path in a time index key (the rest of the key is the due time)


class IndexExpiry(ExpiringRows):
    kind = "indexPath"

    def __init__(self, index: TimeIndex, table: IndexTable) -> None:
        super().__init__(index)
        self.table = table

    def watch(self, entries: list[IndexEntry]) -> None:
        """Index entries about to be inserted, with their namespaces."""
        items: dict[str, tuple[str, str]] = {}
        for entry in entries:
            due = namespace_expiry(entry.expires)
            for kind, path in ((TASK, entry.namespace), *((NAMESPACE, above) for above in ancestors(entry.namespace))):
                key = kind + bounded_key(path, KEY_LIMIT)
                items[key] = max(items.get(key, ("", path)), (due, path))
        if items:
            self.index.add([(due, key) for key, (due, _) in items.items()],
                           {key: path for key, (_, path) in items.items()})

    def _load(self, item: DueItem) -> IndexEntry | Namespace | None:
        if item.key.startswith(TASK):
            return self.table.get(item.value)
        return self.table.namespace(item.value)

    def _delete(self, record: IndexEntry | Namespace) -> None:
        self.table.delete_if_unchanged(record)
