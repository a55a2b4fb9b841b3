"""Clients made with `deleteOnExpiration`, deleted once their `expires` has passed, as
Taskcluster's auth service deletes them; a client without it (the default) is kept after it
expires, and only stops authenticating.

Such a client is put in a time index at its expiry when it is created or updated; when the
item comes due the row is read again: given a later expiry since, it is indexed anew; lapsed,
it is deleted if unchanged since it was read (an update meanwhile wins, and is looked at on
its own item). Other instances stop accepting it within the directory's freshness (10 s), as
they do for a deleted client. A client deleted so is recorded in the audit history as
`expired` by `static/taskcluster/auth`, as Taskcluster's purge-expired-clients records it.
"""

from __future__ import annotations

from shared.services.auth.audit_history import AUTH_SERVICE, EXPIRED, AuditHistory
from shared.services.sweeps.activity_expiry import ExpiringRows
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.client_table import ClientRecord, ClientTable


class ClientExpiry(ExpiringRows):
    kind = "client"

    def __init__(self, index: TimeIndex, table: ClientTable, audit: AuditHistory) -> None:
        super().__init__(index)
        self.table = table
        self.audit = audit

    def watch(self, record: ClientRecord) -> None:
        """Index a client about to be written, if it goes when it expires."""
        if record.delete_on_expiration:
            self._watch_named(record.client_id, record.expires)

    def _load(self, item: DueItem) -> ClientRecord | None:
        record = self.table.load(item.value)
        return record if record is not None and record.delete_on_expiration else None

    def _delete(self, record: ClientRecord) -> None:
        self.table.delete_if_unchanged(record)

    def _expired(self, record: ClientRecord) -> None:
        self.audit.record("client", record.client_id, AUTH_SERVICE, EXPIRED)
