"""The Clients table: the clients made through the auth service's API (the configured
`STATIC_CLIENTS` are not stored).

One partition per client (PartitionKey = the escaped clientId, RowKey `client`), so
authenticating a request signed by a client reads one row. The access token is kept sealed
(`<keyId>:<ciphertext>`, see `services/auth/clients`), never in clear. A change is a merge
conditional on the row's ETag (`save`); `page` reads the clients in clientId order, those
with a prefix, a page at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from shared.storage.client.account import StorageAccount
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_if_unchanged, delete_row
from shared.storage.patterns.keys import escape_key, unescape_key
from shared.storage.patterns.record_writes import RecordWrites
from shared.storage.patterns.queries import first_rows, row_or_none

TABLE = "Clients"
ROW = "client"


@dataclass(frozen=True)
class ClientRecord:
    client_id: str
    description: str
    sealed_token: str          # the access token, sealed for this client
    expires: str
    scopes: tuple[str, ...]
    disabled: bool
    delete_on_expiration: bool
    created: str
    last_modified: str
    last_date_used: str
    last_rotated: str
    etag: str | None = field(default=None, compare=False)


class ClientTable(RecordWrites[ClientRecord]):
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    def load(self, client_id: str) -> ClientRecord | None:
        row = row_or_none(self._table, escape_key(client_id), ROW)
        return _record(row) if row is not None else None

    def _entity(self, record: ClientRecord) -> dict:
        return _entity(record)

    def delete(self, client_id: str) -> None:
        """Delete the client's row (gone already is fine)."""
        delete_row(self._table, escape_key(client_id), ROW)

    def delete_if_unchanged(self, record: ClientRecord) -> None:
        """Delete the row if it is still as read; else ChangedSinceRead."""
        delete_if_unchanged(self._table, escape_key(record.client_id), ROW, record.etag, record.client_id)

    def page(self, prefix: str, after: str, limit: int) -> tuple[list[ClientRecord], str | None]:
        """Up to `limit` clients whose id starts with `prefix`, in id order after the id
        `after`; and the id to continue after (None when none is left)."""
        low = escape_key(max(after, prefix))
        query, parameters = "RowKey eq @row and PartitionKey gt @low", {"row": ROW, "low": low}
        if prefix:
            query += " and PartitionKey lt @high"
            parameters["high"] = escape_key(prefix) + "\x7f"
        rows = first_rows(self._table, query, parameters, limit + 1)
        if not after and prefix and (first := row_or_none(self._table, escape_key(prefix), ROW)) is not None:
            rows = [first, *rows]   # `gt` leaves out the client whose id is the prefix itself
        records = [_record(row) for row in rows]
        return records[:limit], records[limit - 1].client_id if len(records) > limit else None


def _entity(record: ClientRecord) -> dict:
    return {"PartitionKey": escape_key(record.client_id), "RowKey": ROW, "clientId": record.client_id,
            "description": record.description, "accessToken": record.sealed_token, "expires": record.expires,
            **long_text.to_columns("scopes", json.dumps(list(record.scopes))), "disabled": record.disabled,
            "deleteOnExpiration": record.delete_on_expiration, "created": record.created,
            "lastModified": record.last_modified, "lastDateUsed": record.last_date_used,
            "lastRotated": record.last_rotated}


def _record(row) -> ClientRecord:
    return ClientRecord(row.get("clientId") or unescape_key(row["PartitionKey"]), row["description"],
                        row["accessToken"], row["expires"], tuple(json.loads(long_text.from_columns("scopes", row))), bool(row["disabled"]),
                        bool(row["deleteOnExpiration"]), row["created"], row["lastModified"], row["lastDateUsed"],
                        row["lastRotated"], row.metadata.get("etag"))
