"""The auth service's clients: createClient, client, listClients, updateClient,
resetAccessToken, enableClient, disableClient and deleteClient, with Taskcluster's semantics.

A client's access token is made here (two slugids, as Taskcluster's), shown once by
createClient and resetAccessToken, and kept sealed (`Directory`'s `access_token_name`).
Clients whose id starts with `static/` are the configured ones (`STATIC_CLIENTS`): none can
be made or changed through the API. The caller's scopes must satisfy the scopes a client is
given (createClient) or gains (updateClient): the endpoint's requirement, checked by
`call.authorize` on what is added (`api/scopes.py`). A changed client is seen at once by this
process and within seconds by the others (`Directory`). Each change is recorded in the audit
history with who made it (`by`), as Taskcluster records it: created (not a retry answered as
made), updated, access token reset, client enabled, client disabled, deleted (even of a
client that was not there).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable

from shared.auth.clients import NEVER
from shared.auth.scopes import ScopeSet
from shared.domain.errors import Conflict, InputError, NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import normalize_iso, to_iso, utcnow
from shared.services.auth.audit_history import (ACCESS_TOKEN_RESET, CLIENT_DISABLED, CLIENT_ENABLED, CREATED, DELETED,
                                                UPDATED, AuditHistory)
from shared.services.auth.client_expiry import ClientExpiry
from shared.services.auth.directory import Directory, access_token_name
from shared.services.secrets.encryption import SecretBox
from shared.storage.errors import AlreadyExists
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.storage.tables.client_table import ClientRecord, ClientTable

log = logging.getLogger("auth")
STATIC_PREFIX = "static/"
MAX_PAGE = 1000   # clients a listClients page holds at most, as Taskcluster's
STARTED = to_iso(utcnow())   # what a configured client shows as made, changed and used

Authorize = Callable[[object], None]


class ClientCalls:
    def __init__(self, table: ClientTable, directory: Directory, box: Callable[[], SecretBox],
                 expand: Callable[[tuple[str, ...]], ScopeSet], expiry: ClientExpiry, audit: AuditHistory,
                 configured: Callable[[], dict[str, tuple[str, ...]]] = dict) -> None:
        """`expand`: scopes with what the roles grant (a client's `expandedScopes`).
        `configured()`: the configured clients' scopes by id, shown and listed beside the
        stored ones, as Taskcluster shows its static clients."""
        self.table = table
        self.directory = directory
        self._box = box
        self._expand = expand
        self._configured = configured
        self.expiry = expiry
        self.audit = audit

    def create(self, client_id: str, body: dict, *, by: str) -> dict:
        self._refuse_configured(client_id)
        scopes = _scopes(body.get("scopes", []))
        token, now = new_access_token(), to_iso(utcnow())
        record = ClientRecord(client_id, body["description"], self._seal(client_id, token), normalize_iso(body["expires"]),
                              scopes, False, bool(body.get("deleteOnExpiration", False)), now, now, now, now)
        self.expiry.watch(record)   # before the row: a row is never left unswept
        try:
            record = self.table.insert(record)
        except AlreadyExists:
            return self._made_before(record)
        self.directory.forget_client(client_id)
        log.info("client %s created, expires %s", client_id, record.expires)
        self.audit.record("client", client_id, by, CREATED)
        return {**self.render(record), "accessToken": token}

    def _made_before(self, asked: ClientRecord) -> dict:
        """createClient of a client that exists: answered as made if it was made as asked (a
        retry whose answer was lost: the same token again), as Taskcluster answers; else 409."""
        existing = self.table.load(asked.client_id)
        terms = ("description", "expires", "scopes", "delete_on_expiration", "disabled")
        if existing is None or any(getattr(existing, term) != getattr(asked, term) for term in terms):
            raise Conflict("Client already exists")
        token = self._box().open_text(access_token_name(existing.client_id), existing.sealed_token)
        return {**self.render(existing), "accessToken": token}

    def get(self, client_id: str) -> dict:
        configured = self._configured().get(client_id)
        return self.render(self._existing(client_id) if configured is None else self._as_record(client_id, configured))

    def list(self, prefix: str, after: str, limit: int) -> tuple[dict, str | None]:
        """A page of the stored clients and the configured ones, merged in clientId order."""
        limit = min(limit, MAX_PAGE)
        records, last = self.table.page(prefix, after, limit)
        records += [self._as_record(client_id, scopes) for client_id, scopes in self._configured().items()
                    if client_id.startswith(prefix) and client_id > after and (last is None or client_id <= last)]
        records.sort(key=lambda record: record.client_id)
        page = records[:limit]
        more = last is not None or len(records) > limit
        return {"clients": [self.render(record) for record in page]}, page[-1].client_id if more and page else None

    def update(self, client_id: str, body: dict, authorize: Authorize, *, by: str) -> dict:
        self._refuse_configured(client_id)
        scopes = _scopes(body["scopes"]) if "scopes" in body else None

        def change(record: ClientRecord) -> ClientRecord:
            new = record.scopes if scopes is None else scopes
            authorize({"scopesAdded": [scope for scope in new if scope not in record.scopes]})
            changed = replace(record, description=body["description"], expires=normalize_iso(body["expires"]),
                              scopes=new, delete_on_expiration=bool(body.get("deleteOnExpiration", False)),
                              last_modified=to_iso(utcnow()))
            self.expiry.watch(changed)
            return changed
        return self.render(self._changed(client_id, change, UPDATED, by))

    def reset_access_token(self, client_id: str, *, by: str) -> dict:
        self._refuse_configured(client_id)
        token, now = new_access_token(), to_iso(utcnow())
        record = self._changed(client_id, lambda record: replace(
            record, sealed_token=self._seal(client_id, token), last_rotated=now, last_modified=now),
            ACCESS_TOKEN_RESET, by)
        return {**self.render(record), "accessToken": token}

    def enable(self, client_id: str, *, by: str) -> dict:
        return self._set_disabled(client_id, False, by)

    def disable(self, client_id: str, *, by: str) -> dict:
        return self._set_disabled(client_id, True, by)

    def delete(self, client_id: str, *, by: str) -> None:
        self._refuse_configured(client_id)
        self.table.delete(client_id)
        self.directory.forget_client(client_id)
        log.info("client %s deleted", client_id)
        self.audit.record("client", client_id, by, DELETED)

    def render(self, record: ClientRecord) -> dict:
        return {"clientId": record.client_id, "description": record.description, "expires": record.expires,
                "created": record.created, "lastModified": record.last_modified,
                "lastDateUsed": record.last_date_used, "lastRotated": record.last_rotated,
                "deleteOnExpiration": record.delete_on_expiration, "scopes": list(record.scopes),
                "expandedScopes": list(self._expand(record.scopes).scopes), "disabled": record.disabled}

    def _set_disabled(self, client_id: str, disabled: bool, by: str) -> dict:
        self._refuse_configured(client_id)
        record = self._changed(client_id, lambda record: record if record.disabled == disabled else replace(
            record, disabled=disabled, last_modified=to_iso(utcnow())),
            CLIENT_DISABLED if disabled else CLIENT_ENABLED, by)
        return self.render(record)

    def _changed(self, client_id: str, change: Callable[[ClientRecord], ClientRecord], action: str,
                 by: str) -> ClientRecord:
        record = change_until_saved(lambda: self.table.load(client_id), change, self.table.save)
        if record is None:
            raise NotFound("Client not found")
        self.directory.forget_client(client_id)
        log.info("client %s: %s", client_id, action)
        self.audit.record("client", client_id, by, action)
        return record

    def _refuse_configured(self, client_id: str) -> None:
        if client_id.startswith(STATIC_PREFIX) or client_id in self._configured():
            raise InputError(f'clientId "{client_id}" is a configured client (STATIC_CLIENTS; ids starting with '
                             f'"{STATIC_PREFIX}" are reserved for them): contact your administrator to change it.')

    @staticmethod
    def _as_record(client_id: str, scopes: tuple[str, ...]) -> ClientRecord:
        """A configured client as the API shows it: no token, never expiring, made at start."""
        return ClientRecord(client_id, "a client configured in STATIC_CLIENTS", "", NEVER, scopes, False, False,
                            STARTED, STARTED, STARTED, STARTED)

    def _existing(self, client_id: str) -> ClientRecord:
        record = self.table.load(client_id)
        if record is None:
            raise NotFound("Client not found")
        return record

    def _seal(self, client_id: str, token: str) -> str:
        return self._box().seal_text(access_token_name(client_id), token)


def new_access_token() -> str:
    """44 characters of two slugids, as Taskcluster's access tokens."""
    return new_slugid() + new_slugid()


def _scopes(scopes: list[str]) -> tuple[str, ...]:
    if any(scope.endswith("**") for scope in scopes):
        raise InputError("scopes must not end with `**`")
    return tuple(scopes)
