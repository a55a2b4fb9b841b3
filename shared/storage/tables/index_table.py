"""The Index table: indexed tasks and the namespaces above them (see `domain.index`).

Everything directly under a namespace is one partition: PartitionKey = `.` + the escaped
namespace (`.` alone for the root, whose key may not be empty), so listNamespaces and listTasks
read one key range of one partition, a page at a time, never scanning the table. In it,
RowKey = `n:<name>` for a child namespace and `t:<name>` for a task indexed at
`<namespace>.<name>` (a path can be both: `a.b` holds tasks and is itself a task).

Writes are conditional, so concurrent indexers settle as the rank rule says: an entry is
inserted (refused if another came first) or replaced only if the row is still as read and
its rank is not higher; the loser reads again and decides again. The namespaces are written
before the entry, nearest the root first, so a process that dies between the writes leaves
at most an empty namespace, and the same insert repeated finishes the work.
"""

from __future__ import annotations

import json
from dataclasses import replace


from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_if_unchanged, delete_row
from shared.storage.patterns.conditional_writes import until_written
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import first_rows, row_or_none
from shared.domain.index import IndexEntry, Namespace, ancestors, namespace_expiry, replaces, split_namespace

TABLE = "Index"
NAMESPACE, TASK = "n:", "t:"
_NEXT = {NAMESPACE: "n;", TASK: "t;"}    # the first key after every row of the kind (';' follows ':')
_KEY_LIMIT = 500                          # characters of a key (Azure takes 1 KiB)


class IndexTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    # -- indexed tasks ----------------------------------------------------------------------
    def get(self, namespace: str) -> IndexEntry | None:
        row = self._row(TASK, namespace)
        return _entry(split_namespace(namespace)[0], row) if row is not None else None

    def insert(self, entry: IndexEntry) -> IndexEntry:
        """Index `entry` unless a higher rank is stored at its path; returns what the path
        holds afterwards (the stored entry when `entry` lost). Idempotent."""
        self.ensure_namespaces(entry.namespace, entry.expires)

        def write(stored: IndexEntry | None) -> IndexEntry:
            if stored is not None and (stored == entry or not replaces(entry.rank, stored.rank)):
                return stored     # outranked, or this very entry (inserted again: nothing to write)
            try:
                meta = lost_responses.write(self._table, _entity(entry), stored.etag if stored else None)
            except AlreadyExists:
                raise ChangedSinceRead(entry.namespace)   # another indexer wrote meanwhile: compare
            return replace(entry, etag=meta.get("etag"))
        return until_written(lambda: self.get(entry.namespace), write)

    def delete(self, namespace: str) -> None:
        """Remove the task at `namespace` (its namespaces stay, as in Taskcluster); gone is fine."""
        parent, name = split_namespace(namespace)
        delete_row(self._table, _partition(parent), TASK + _name_key(name))

    def delete_if_unchanged(self, record: IndexEntry | Namespace) -> None:
        """Delete an entry or a namespace if it is still as read (its ETag); else
        ChangedSinceRead. Gone already is fine."""
        parent, name = split_namespace(record.namespace)
        kind = TASK if isinstance(record, IndexEntry) else NAMESPACE
        delete_if_unchanged(self._table, _partition(parent), kind + _name_key(name), record.etag, record.namespace)

    def tasks(self, namespace: str, after: str, limit: int) -> tuple[list[IndexEntry], str | None]:
        """Up to `limit` tasks directly in `namespace` (`""`: the root) after the name `after`,
        and the name to continue after (None when none is left)."""
        rows, more = self._page(namespace, TASK, after, limit)
        entries = [_entry(namespace, row) for row in rows]
        return entries, split_namespace(entries[-1].namespace)[1] if more else None

    # -- namespaces -------------------------------------------------------------------------
    def namespaces(self, namespace: str, after: str, limit: int) -> tuple[list[Namespace], str | None]:
        """Up to `limit` namespaces directly in `namespace` after the name `after`, and the
        name to continue after (None when none is left)."""
        rows, more = self._page(namespace, NAMESPACE, after, limit)
        found = [_namespace(namespace, row) for row in rows]
        return found, found[-1].name if more else None

    def namespace(self, namespace: str) -> Namespace | None:
        row = self._row(NAMESPACE, namespace)
        return _namespace(split_namespace(namespace)[0], row) if row is not None else None

    def ensure_namespaces(self, namespace: str, expires: str) -> None:
        """Every namespace above an entry at `namespace` exists and lives until its `expires`
        (rounded up to a day). Read from the nearest up to the first that is fine already (its
        own ancestors were written before it), then written nearest the root first."""
        until, missing = namespace_expiry(expires), []
        for path in ancestors(namespace):
            found = self.namespace(path)
            if found is not None and found.expires >= until:
                break
            missing.append(found or Namespace(path, until))
        for found in reversed(missing):
            self._extend(found, until)

    def _extend(self, found: Namespace, until: str) -> None:
        """Write the namespace `found` (not stored yet when it has no ETag) to live `until`."""
        def write(current: Namespace) -> None:
            if current.etag is not None and current.expires >= until:
                return
            try:
                lost_responses.write(self._table, _namespace_entity(current.namespace, until), current.etag)
            except AlreadyExists:
                raise ChangedSinceRead(current.namespace)
        until_written(lambda: self.namespace(found.namespace) or Namespace(found.namespace, until), write, found)

    def _row(self, kind: str, namespace: str):
        parent, name = split_namespace(namespace)
        return row_or_none(self._table, _partition(parent), kind + _name_key(name))

    def _page(self, namespace: str, kind: str, after: str, limit: int) -> tuple[list, bool]:
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after and RowKey lt @end",
                          {"pk": _partition(namespace), "after": kind + (_name_key(after) if after else ""),
                           "end": _NEXT[kind]}, limit + 1)
        return rows[:limit], len(rows) > limit


def _partition(namespace: str) -> str:
    return "." + bounded_key(namespace, _KEY_LIMIT)


def _name_key(name: str) -> str:
    return bounded_key(name, _KEY_LIMIT)


def _entity(entry: IndexEntry) -> dict:
    parent, name = split_namespace(entry.namespace)
    return {"PartitionKey": _partition(parent), "RowKey": TASK + _name_key(name), "name": name,
            "taskId": entry.task_id, "rank": json.dumps(entry.rank), "data": json.dumps(entry.data),
            "expires": entry.expires}


def _entry(parent: str, entity) -> IndexEntry:
    namespace = f"{parent}.{entity['name']}" if parent else entity["name"]
    return IndexEntry(namespace, entity["taskId"], json.loads(entity["rank"]), json.loads(entity["data"]),
                      entity["expires"], entity.metadata.get("etag"))


def _namespace_entity(namespace: str, expires: str) -> dict:
    parent, name = split_namespace(namespace)
    return {"PartitionKey": _partition(parent), "RowKey": NAMESPACE + _name_key(name), "name": name,
            "expires": expires}


def _namespace(parent: str, entity) -> Namespace:
    namespace = f"{parent}.{entity['name']}" if parent else entity["name"]
    return Namespace(namespace, entity["expires"], entity.metadata.get("etag"))
