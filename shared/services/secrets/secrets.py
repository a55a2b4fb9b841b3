"""Taskcluster's secrets service: set, get, remove and list named secrets, kept sealed at rest.

A value is sealed (`encryption.SecretBox`, AES-256-GCM, the name bound to it) before it is
written and opened only to answer `get`; nothing here logs, raises or publishes a value:
log lines and errors name the secret and its expiry, never what it holds. A secret past its
`expires` is absent to `get` (404, as Taskcluster's query leaves it out; its own test asserts
so, though its API description says 410) and to `list` until the expiration sweep deletes it
(`SecretExpiry`, indexed at each `set`).

Each change is recorded in the audit history with who made it (`by`), as Taskcluster
records it: created (no live secret of that name was there), updated, deleted (even of a
secret that was not there), and expired by `static/taskcluster/secrets` when the sweep
deletes it. Only the name is recorded, never the value.
"""

from __future__ import annotations

import logging
from shared.domain.errors import InvalidInput, NotFound, QueueError
from shared.domain.timestamps import normalize_iso, utcnow
from shared.services.auth.audit_history import CREATED, DELETED, EXPIRED, SECRETS_SERVICE, UPDATED, AuditHistory
from shared.services.secrets.encryption import SETTING, CannotOpen, SecretBox, Sealed
from shared.services.sweeps.activity_expiry import ExpiringRows, lapsed
from shared.storage.patterns.time_index import DueItem, TimeIndex
from shared.storage.tables.secret_table import MAX_SEALED_CHARS, SecretTable, StoredSecret

log = logging.getLogger("secrets")


class NotConfigured(QueueError):
    """No encryption key is configured: secrets can be neither sealed nor opened."""

    code = "ServiceUnavailable"


class Secrets:
    def __init__(self, table: SecretTable, box: SecretBox | None, expiry: SecretExpiry, audit: AuditHistory) -> None:
        """`box`: None when SECRETS_ENCRYPTION_KEYS is not set (every call but `list` and
        `remove` is then refused, saying so)."""
        self.table = table
        self._box = box
        self.expiry = expiry
        self.audit = audit

    def set(self, name: str, body: dict, *, by: str) -> dict:
        expires = normalize_iso(body["expires"])
        sealed = self.box.seal(name, body["secret"])
        if len(sealed.ciphertext) > MAX_SEALED_CHARS:
            raise InvalidInput(f"secret: {len(sealed.ciphertext) * 3 // 4} bytes sealed, at most "
                               f"{MAX_SEALED_CHARS * 3 // 4}")
        former = self.table.load(name)
        self.expiry.watch(name, expires)   # before the row: a row is never left unswept
        self.table.save(StoredSecret(name, sealed.key_id, sealed.ciphertext, expires))
        log.info("secret %r set, expires %s (key %s)", name, expires, sealed.key_id)
        live = former is not None and not lapsed(former.expires, utcnow())
        self.audit.record("secret", name, by, UPDATED if live else CREATED)
        return {}

    def get(self, name: str) -> dict:
        stored = self.table.load(name)
        if stored is None or lapsed(stored.expires, utcnow()):
            raise NotFound(f"Secret {name!r} not found")
        try:
            value = self.box.open(name, Sealed(stored.key_id, stored.ciphertext))
        except CannotOpen as error:
            log.error("%s", error)
            raise QueueError(f"Secret {name!r} cannot be opened with the configured keys") from None
        return {"secret": value, "expires": stored.expires}

    def remove(self, name: str, *, by: str) -> dict:
        self.table.remove(name)
        log.info("secret %r removed", name)
        self.audit.record("secret", name, by, DELETED)
        return {}

    def list(self, after: str, limit: int) -> tuple[dict, str | None]:
        """The names of the secrets not expired, in key order, a page at a time."""
        now = utcnow()
        found, last = self.table.names(after, limit)
        return {"secrets": [name for name, expires in found if not lapsed(expires, now)]}, last

    @property
    def box(self) -> SecretBox:
        if self._box is None:
            raise NotConfigured(f"The secrets service has no encryption key: the app setting {SETTING} is not set")
        return self._box


class SecretExpiry(ExpiringRows):
    """Secrets deleted once their `expires` has passed (unless set again since)."""

    kind = "secret"

    def __init__(self, index: TimeIndex, table: SecretTable, audit: AuditHistory) -> None:
        super().__init__(index)
        self.table = table
        self.audit = audit

    def watch(self, name: str, expires: str) -> None:
        self._watch_named(name, expires)

    def _load(self, item: DueItem) -> StoredSecret | None:
        return self.table.load(item.value)

    def _delete(self, record: StoredSecret) -> None:
        self.table.delete(record)

    def _expired(self, record: StoredSecret) -> None:
        self.audit.record("secret", record.name, SECRETS_SERVICE, EXPIRED)
