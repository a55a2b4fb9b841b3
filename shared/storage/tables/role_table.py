"""The Roles table: the roles made through the auth service's API (the configured roles,
`QUEUE_ROLES`, are not stored).

Every role in one partition (PartitionKey `roles`, RowKey the escaped roleId), since every
process expands scopes with all of them: one query reads them all (`all`), in roleId order. A
change is a merge conditional on the row's ETag (`save`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from shared.storage.client.account import StorageAccount
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_row
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.record_writes import RecordWrites
from shared.storage.patterns.queries import row_or_none

TABLE = "Roles"
PARTITION = "roles"
_KEY_LIMIT = 500   # characters of a key (Azure takes 1 KiB)


@dataclass(frozen=True)
class RoleRecord:
    role_id: str
    description: str
    scopes: tuple[str, ...]
    created: str
    last_modified: str
    etag: str | None = field(default=None, compare=False)


class RoleTable(RecordWrites[RoleRecord]):
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    def load(self, role_id: str) -> RoleRecord | None:
        row = row_or_none(self._table, PARTITION, bounded_key(role_id, _KEY_LIMIT))
        return _record(row) if row is not None else None

    def all(self) -> list[RoleRecord]:
        """Every role, in roleId order."""
        rows = self._table.query_entities("PartitionKey eq @pk", parameters={"pk": PARTITION})
        return sorted((_record(row) for row in rows), key=lambda role: role.role_id)

    def _entity(self, record: RoleRecord) -> dict:
        return _entity(record)

    def delete(self, role_id: str) -> None:
        """Delete the role's row (gone already is fine)."""
        delete_row(self._table, PARTITION, bounded_key(role_id, _KEY_LIMIT))


def _entity(record: RoleRecord) -> dict:
    return {"PartitionKey": PARTITION, "RowKey": bounded_key(record.role_id, _KEY_LIMIT), "roleId": record.role_id,
            "description": record.description, **long_text.to_columns("scopes", json.dumps(list(record.scopes))),
            "created": record.created, "lastModified": record.last_modified}


def _record(row) -> RoleRecord:
    return RoleRecord(row["roleId"], row["description"], tuple(json.loads(long_text.from_columns("scopes", row))),
                      row["created"], row["lastModified"], row.metadata.get("etag"))
