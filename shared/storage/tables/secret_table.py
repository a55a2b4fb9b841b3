"""The Secrets table: each secret's sealed value and its expiry (see `services/secrets`).

One partition per secret (PartitionKey = the escaped name, RowKey `secret`), so reading one
secret, what every task that uses it does, never queues behind the others' partition. The
row holds only what was sealed (`services/secrets/encryption`): the key's id and the
ciphertext (in chunks, see `long_text`), never the value. `list` reads the names in key order, a page at a time.

`save` writes the whole row (a secret set again replaces its value, as Taskcluster's upsert);
the expiry sweep deletes a row only if it is still as read (`delete`, with its ETag), so a
secret set again meanwhile stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from azure.data.tables import UpdateMode

from shared.storage.client.account import StorageAccount
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_if_unchanged, delete_row
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import first_rows, row_or_none

TABLE = "Secrets"
ROW = "secret"
_KEY_LIMIT = 500                   # characters of a key (Azure takes 1 KiB)
MAX_SEALED_CHARS = 400_000         # a row holds 1 MiB, two bytes a character


@dataclass(frozen=True)
class StoredSecret:
    name: str
    key_id: str            # of the key that sealed it
    ciphertext: str
    expires: str
    etag: str | None = field(default=None, compare=False)


class SecretTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    def load(self, name: str) -> StoredSecret | None:
        row = row_or_none(self._table, _partition(name), ROW)
        if row is None:
            return None
        return StoredSecret(row["name"], row["keyId"], long_text.from_columns("sealed", row), row["expires"],
                            row.metadata.get("etag"))

    def save(self, secret: StoredSecret) -> None:
        """Write the secret whole, over whatever the row held."""
        self._table.upsert_entity({"PartitionKey": _partition(secret.name), "RowKey": ROW, "name": secret.name,
                                   "keyId": secret.key_id, "expires": secret.expires,
                                   **long_text.to_columns("sealed", secret.ciphertext)},
                                  mode=UpdateMode.REPLACE)

    def remove(self, name: str) -> None:
        """Delete the secret (gone already is fine)."""
        delete_row(self._table, _partition(name), ROW)

    def delete(self, secret: StoredSecret) -> None:
        """Delete the secret if it is still as read; else ChangedSinceRead."""
        delete_if_unchanged(self._table, _partition(secret.name), ROW, secret.etag, secret.name)

    def names(self, after: str, limit: int) -> tuple[list[tuple[str, str]], str | None]:
        """Up to `limit` (name, expires) after the name `after`, in key order, and the name to
        continue after (None when none is left)."""
        rows = first_rows(self._table, "RowKey eq @row and PartitionKey gt @after",
                          {"row": ROW, "after": _partition(after) if after else ""}, limit + 1,
                          select=["name", "expires"])
        found = [(row["name"], row["expires"]) for row in rows[:limit]]
        return found, found[-1][0] if len(rows) > limit else None


def _partition(name: str) -> str:
    return bounded_key(name, _KEY_LIMIT)
