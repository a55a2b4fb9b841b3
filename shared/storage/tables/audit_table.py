"""The AuditHistory table: Taskcluster's audit history (who created, changed or deleted a
client, role, secret, hook or worker pool, and when; see `services/auth/audit_history`).

Each entry is two rows with the same columns, one for each way it is read, so each listing
is a query of one partition:
- by entity: PartitionKey `e.<entityType>.<entityId escaped>`;
- by acting client: PartitionKey `c.<clientId escaped>`.
RowKey is the entry's key, `<created to the microsecond>.<random>`: a partition lists in the
order the entries were made, oldest first, as Taskcluster's `order by created`, and a page
continues after the last key it held. Both rows are written at once (two partitions, so two
requests sent together); `remove` deletes both.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.storage.client.account import StorageAccount
from shared.storage.patterns.batches import delete_in_batches, upsert_in_batches
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import first_rows

TABLE = "AuditHistory"
_KEY_LIMIT = 480   # characters of a partition key after its prefix (Azure takes 1 KiB)
_COLUMNS = ["RowKey", "entityId", "entityType", "clientId", "actionType", "created"]


@dataclass(frozen=True)
class AuditEntry:
    key: str            # the RowKey: time-ordered and unique
    entity_type: str
    entity_id: str
    client_id: str      # who acted
    action_type: str
    created: str        # ISO, as the API shows it

    @property
    def partitions(self) -> tuple[str, str]:
        return entity_partition(self.entity_type, self.entity_id), client_partition(self.client_id)


def entity_partition(entity_type: str, entity_id: str) -> str:
    return f"e.{entity_type}.{bounded_key(entity_id, _KEY_LIMIT)}"


def client_partition(client_id: str) -> str:
    return f"c.{bounded_key(client_id, _KEY_LIMIT)}"


class AuditTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    def add(self, entry: AuditEntry) -> None:
        """Write the entry's two rows (an upsert: writing it again changes nothing)."""
        columns = {"entityId": entry.entity_id, "entityType": entry.entity_type, "clientId": entry.client_id,
                   "actionType": entry.action_type, "created": entry.created}
        upsert_in_batches(self._table, [{"PartitionKey": partition, "RowKey": entry.key, **columns}
                                        for partition in entry.partitions])

    def page(self, partition: str, after: str, limit: int) -> tuple[list[AuditEntry], str | None]:
        """Up to `limit` entries of a partition, oldest first, after the key `after`; and the
        key to continue after (None when none is left)."""
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after", {"pk": partition, "after": after},
                          limit + 1, _COLUMNS)
        entries = [AuditEntry(row["RowKey"], row["entityType"], row["entityId"], row["clientId"], row["actionType"],
                              row["created"]) for row in rows]
        return entries[:limit], entries[limit - 1].key if len(entries) > limit else None

    def remove(self, entries: list[tuple[tuple[str, ...], str]]) -> None:
        """Delete entries given as (their partitions, their key); gone already is fine."""
        delete_in_batches(self._table, [(partition, key) for partitions, key in entries for partition in partitions])
