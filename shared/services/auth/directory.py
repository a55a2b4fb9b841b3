"""What authentication reads of the clients and roles the auth service keeps (the realm's
`Directory`, see `shared/auth/clients.py`): a client by its id, and every role.

Every signed request needs the roles and most need a client, so both are kept in memory for
a few seconds: a change made through another instance of the app (or another process) is
seen within ROLES_FRESH or CLIENT_FRESH, as Taskcluster's services see a change of its auth
service within their own caches' lifetime. A change this process makes is seen at once
(`forget_client`, `forget_roles`). A client that is not found is remembered briefly only, so
that one made a moment ago elsewhere is soon usable here. A client read whose `lastDateUsed` is
more than 6 hours old has it written, after the request, as Taskcluster keeps it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from datetime import timedelta
from typing import Callable

from shared.auth.clients import StoredClient
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.runtime.thread_pools import BATCH_WRITES
from shared.services.secrets.encryption import SecretBox
from shared.storage.errors import ChangedSinceRead
from shared.storage.tables.client_table import ClientRecord, ClientTable
from shared.storage.tables.role_table import RoleTable

log = logging.getLogger("auth")
CLIENT_FRESH = 10.0      # seconds a client read is used for
ABSENT_FRESH = 1.0       # seconds a client found missing is taken as missing
ROLES_FRESH = 5.0        # seconds the roles read are used for
REMEMBERED = 4096        # clients kept in memory
USE_NOTED_EVERY = timedelta(hours=6)   # a client's lastDateUsed is written when older than this


class Directory:
    def __init__(self, clients: ClientTable, roles: RoleTable, box: Callable[[], SecretBox],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`box()`: the keys the access tokens are sealed with (see `access_token_name`)."""
        self._client_table = clients
        self._role_table = roles
        self._box = box
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, tuple[float, StoredClient | None]] = OrderedDict()
        self._roles: tuple[object, dict[str, tuple[str, ...]]] = ((), {})
        self._roles_read = -float("inf")
        self._roles_loaded = False

    def client(self, client_id: str) -> StoredClient | None:
        now = self._clock()
        with self._lock:
            known = self._clients.get(client_id)
        if known is not None and now - known[0] < (CLIENT_FRESH if known[1] is not None else ABSENT_FRESH):
            return known[1]
        record = self._client_table.load(client_id)
        if record is not None and _long_unused(record.last_date_used):
            BATCH_WRITES.detach(self._note_use, record)
        stored = None if record is None else StoredClient(
            self._box().open_text(access_token_name(client_id), record.sealed_token), record.scopes, record.expires,
            record.disabled)
        with self._lock:
            self._clients[client_id] = (now, stored)
            self._clients.move_to_end(client_id)
            while len(self._clients) > REMEMBERED:
                self._clients.popitem(last=False)
        return stored

    def roles(self) -> tuple[object, dict[str, tuple[str, ...]]]:
        if self._clock() - self._roles_read < ROLES_FRESH:
            return self._roles
        with self._lock:   # one thread reads; the others wait for what it reads
            if self._clock() - self._roles_read >= ROLES_FRESH:
                self._read_roles()
            return self._roles

    def _read_roles(self) -> None:
        try:
            records = self._role_table.all()
        except Exception:
            if not self._roles_loaded:
                raise
            log.warning("the roles could not be read: those read before are used meanwhile", exc_info=True)
            self._roles_read = self._clock()
            return
        self._roles = (tuple((role.role_id, role.etag) for role in records),
                       {role.role_id: role.scopes for role in records})
        self._roles_read, self._roles_loaded = self._clock(), True

    def _note_use(self, record: ClientRecord) -> None:
        """Record that the client is in use (its `lastDateUsed`, which Taskcluster keeps to
        within 6 hours), unless someone changed the row since it was read."""
        try:
            self._client_table.save(replace(record, last_date_used=to_iso(utcnow())))
        except ChangedSinceRead:
            pass
        except Exception:   # noqa: BLE001 (a hint for people, never worth failing or retrying for)
            log.warning("could not record that client %s is in use", record.client_id, exc_info=True)

    def forget_client(self, client_id: str) -> None:
        """This process changed the client: read it again when next needed."""
        with self._lock:
            self._clients.pop(client_id, None)

    def forget_roles(self) -> None:
        """This process changed a role: read them again when next needed."""
        with self._lock:
            self._roles_read = -float("inf")


def _long_unused(last_date_used: str) -> bool:
    return parse_iso(last_date_used) < utcnow() - USE_NOTED_EVERY


def access_token_name(client_id: str) -> str:
    """What a client's access token is sealed for: a sealed token copied onto another client's
    row does not open there."""
    return f"auth/access-token/{client_id}"
