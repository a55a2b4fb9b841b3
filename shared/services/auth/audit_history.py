"""Taskcluster's audit history: an entry {entityId, entityType, clientId, actionType, created}
for each change of a client, role, secret, hook or worker pool, read by entity
(getEntityHistory) or by the client who acted (listAuditHistory), oldest first, and purged
30 days after it was made (Taskcluster's `auditHistoryRetention` default, `-30d`).

An entry is written after the change it records; failing to write it is logged as a warning
naming the entity and action, and never fails the change. Each entry is indexed for the
purge (`AuditHistoryPurge`, run by the expiration timer) before its rows are written, so no
row is left unpurged. Who acted is the request's clientId, or Taskcluster's
`auth-failed:no-auth` for a request without credentials; the expiry sweeps act as
Taskcluster's own static clients (`static/taskcluster/auth`, `static/taskcluster/secrets`).
"""

from __future__ import annotations

import json
import logging
import secrets
from datetime import datetime, timedelta
from typing import Callable

from shared.domain.timestamps import to_iso, utcnow
from shared.services.sweeps.sweep import Sweep
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.audit_table import AuditEntry, AuditTable, client_partition, entity_partition

log = logging.getLogger("auth.audit")

RETENTION = timedelta(days=30)   # Taskcluster's auditHistoryRetention default
INDEX = "audit-expires"
ENTITY_TYPES = ("client", "role", "secret", "hook", "worker-pool")   # getEntityHistory's entityType
# Taskcluster's AUDIT_ENTRY_TYPE action types
CREATED, UPDATED, DELETED, EXPIRED = "created", "updated", "deleted", "expired"
CLIENT_ENABLED, CLIENT_DISABLED, ACCESS_TOKEN_RESET = "client enabled", "client disabled", "access token reset"
# Who acts in the expiry sweeps, and for a request without credentials, as Taskcluster names them
AUTH_SERVICE, SECRETS_SERVICE, NO_AUTH = "static/taskcluster/auth", "static/taskcluster/secrets", "auth-failed:no-auth"


class AuditHistory:
    def __init__(self, table: AuditTable, index: TimeIndex, clock: Callable[[], datetime] = utcnow) -> None:
        self.table = table
        self.index = index
        self._clock = clock

    def record(self, entity_type: str, entity_id: str, by: str, action_type: str) -> None:
        """Record that `by` did `action_type` to the entity, now; never raises."""
        now = self._clock()
        entry = AuditEntry(f"{now.strftime('%Y-%m-%dT%H:%M:%S.%f')}.{secrets.token_hex(4)}", entity_type, entity_id,
                           by, action_type, to_iso(now))
        try:
            self.index.put(to_iso(now + RETENTION), entry.key, json.dumps(entry.partitions))
            self.table.add(entry)
        except Exception as error:   # the change it records is made: it stands
            log.warning("audit history: %s of %s %r by %s not recorded (%s)", action_type, entity_type, entity_id,
                        by, type(error).__name__)

    def entity_history(self, entity_type: str, entity_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        return self._page(entity_partition(entity_type, entity_id), after, limit)

    def client_history(self, client_id: str, after: str, limit: int) -> tuple[dict, str | None]:
        return self._page(client_partition(client_id), after, limit)

    def _page(self, partition: str, after: str, limit: int) -> tuple[dict, str | None]:
        entries, last = self.table.page(partition, after, limit)
        return {"auditHistory": [render(entry) for entry in entries]}, last


def render(entry: AuditEntry) -> dict:
    return {"entityId": entry.entity_id, "entityType": entry.entity_type, "clientId": entry.client_id,
            "actionType": entry.action_type, "created": entry.created}


class AuditHistoryPurge(Sweep):
    """Taskcluster's purge-audit-history: entries older than the retention, deleted (both rows)."""

    def __init__(self, index: TimeIndex, table: AuditTable) -> None:
        super().__init__(index)
        self.table = table

    def _handle_batch(self, items: list[DueItem], now: datetime) -> list[int | None]:
        self.table.remove([(tuple(json.loads(item.value)), item.key) for item in items if item.value])
        return [1] * len(items)
