"""The clients a deployment trusts, its roles, and what a caller without credentials may do.

Configured in Taskcluster's formats: `STATIC_CLIENTS` is a JSON list of
`{clientId, accessToken, scopes, description?}`, the roles a JSON list of
`{roleId, scopes, description?}`; beside them, those the auth service keeps (a `Directory`:
clients and roles made through its API), read again when they may have changed. Every caller,
with credentials or without, also holds `assume:anonymous`: the role `anonymous` grants the
anonymous scopes.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Protocol

from shared.auth.certificates import Limited, apply_ext, issuer_of, parse_ext
from shared.auth.errors import AuthenticationFailed
from shared.auth.roles import ASSUME, Roles
from shared.auth.scopes import ScopeSet, valid_scope
from shared.config import DEFAULT_CREDENTIALS_TOKEN, Settings
from shared.domain.timestamps import to_iso, utcnow

log = logging.getLogger("queue.auth")
ANONYMOUS_ROLE = "anonymous"
ASSUME_ANONYMOUS = "assume:" + ANONYMOUS_ROLE
# Taskcluster's documented `anonymous` role of a public deployment, its Queue, hooks and index
# parts (reading tasks, groups, workers, public artifacts, hooks and their fires; finding and
# listing indexed tasks), and reading task graphs (their tasks). Secrets' names are not public.
# Any caller may ask which scopes it holds (`currentScopes`: nothing but its own).
DEFAULT_ANONYMOUS_SCOPES = (
    "auth:current-scopes",
    "hooks:get:*",
    "hooks:list-hooks:*",
    "hooks:list-last-fires:*",
    "hooks:status:*",
    "index:find-task:*",
    "index:list-namespaces:*",
    "index:list-tasks:*",
    "queue:get-artifact:public/*",
    "queue:get-provisioner:*",
    "queue:get-task:*",
    "queue:get-worker-type:*",
    "queue:get-worker:*",
    "queue:list-artifacts:*",
    "queue:list-dependent-tasks:*",
    "queue:list-provisioners",
    "queue:list-task-group:*",
    "queue:list-worker-types:*",
    "queue:list-workers:*",
    "queue:pending-count:*",
    "queue:status:*",
    "scheduler:get-task-graph:*",
    "secrets:list-secrets",
)
# What a client id may contain: a Hawk header attribute's characters.
_CLIENT_ID = re.compile(r"[ a-zA-Z0-9_!#$%&'()*+,\-./:;<=>?@\[\]^`{|}~]+")


class ConfigurationError(ValueError):
    """A setting that cannot be used; its message never quotes an access token."""


UNREADABLE_PAUSE = 5   # seconds the configured roles alone serve after the stored ones could not be read
NEVER = "3000-01-01T00:00:00.000Z"   # the expiry of a configured client's credentials, as Taskcluster's


@dataclass(frozen=True)
class Caller:
    """Who made a request: `client_id` is None without credentials. `expires`: when the
    credentials it signed with stop working."""

    client_id: str | None
    scopes: ScopeSet
    scheme: str = "none"   # "hawk", "bewit" or "none"
    expires: str = NEVER


@dataclass(frozen=True)
class StoredClient:
    """A client the auth service keeps (see `Directory`), as authentication needs it."""

    access_token: str
    scopes: tuple[str, ...]
    expires: str
    disabled: bool


class Directory(Protocol):
    """The clients and roles the auth service keeps, beside the configured ones; answers may be
    a few seconds old (the service's own writes are seen at once by its process)."""

    def client(self, client_id: str) -> StoredClient | None: ...

    def roles(self) -> tuple[object, dict[str, tuple[str, ...]]]:
        """A version (equal while the roles are the same) and the scopes of each roleId."""
        ...


@dataclass(frozen=True)
class Credentials:
    key: str            # what the request must be signed with
    scopes: ScopeSet    # expanded, the anonymous role's included
    expires: str


@dataclass(frozen=True)
class _Client:
    access_token: str
    scopes: ScopeSet        # expanded, without the anonymous role (what it may issue)
    caller_scopes: ScopeSet  # with it: what a request signed with its own token may do
    expires: str = NEVER


class _Expansion:
    """Role expansion with one set of roles (the configured ones and the stored ones), and
    the configured clients and the anonymous caller as it gives them."""

    def __init__(self, roles: dict[str, Iterable[str]], version: object,
                 clients: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        self.version = version
        self.roles = Roles(roles)
        self.expand = lru_cache(maxsize=4096)(lambda scopes: ScopeSet(self.roles.expand_all(scopes)))
        self.configured = {client_id: self.client(token, scopes) for client_id, (token, scopes) in clients.items()}
        self.anonymous = Caller(None, self.expand((ASSUME_ANONYMOUS,)))

    def client(self, token: str, scopes: Iterable[str], expires: str = NEVER) -> _Client:
        scopes = tuple(scopes)
        return _Client(token, self.expand(scopes), self.expand((*scopes, ASSUME_ANONYMOUS)), expires)


class Realm:
    def __init__(self, clients: dict[str, tuple[str, Iterable[str]]], roles: dict[str, Iterable[str]],
                 anonymous_scopes: Iterable[str], directory: Directory | None = None) -> None:
        """`directory`: the clients and roles the auth service keeps, if it is served."""
        roles = {role_id: tuple(scopes) for role_id, scopes in roles.items()}
        roles[ANONYMOUS_ROLE] = (*roles.get(ANONYMOUS_ROLE, ()), *anonymous_scopes)
        self._configured_roles = roles
        self._configured_clients = {client_id: (token, tuple(scopes)) for client_id, (token, scopes) in clients.items()}
        self._directory = directory
        self._lock = threading.Lock()
        self._expansion = self._expanded({}, None)
        self._retry_at = 0.0   # when to ask the directory again after it failed

    @classmethod
    def from_settings(cls, static_clients: str, roles: str, anonymous_scopes: str,
                      issuer: tuple[str, str] | None = None, directory: Directory | None = None) -> Realm:
        """From the settings' JSON texts (empty: none; anonymous scopes empty: the default).
        `issuer`: the (clientId, accessToken) the Queue signs claims' credentials with; it
        is trusted with `*`, as Taskcluster's queue client is, unless STATIC_CLIENTS lists it."""
        clients = {entry["clientId"]: (entry["accessToken"], entry["scopes"])
                   for entry in _entries(static_clients, "STATIC_CLIENTS", ("clientId", "accessToken", "scopes"))}
        if issuer is not None and issuer[0] not in clients:
            clients[issuer[0]] = (issuer[1], ["*"])
        role_map: dict[str, list[str]] = {}
        for entry in _entries(roles, "roles", ("roleId", "scopes")):
            role_map.setdefault(entry["roleId"], []).extend(entry["scopes"])
        anonymous = DEFAULT_ANONYMOUS_SCOPES if not anonymous_scopes.strip() else _scopes(
            _json(anonymous_scopes, "anonymous scopes"), "anonymous scopes")
        return cls(clients, role_map, anonymous, directory)

    def _expanded(self, stored_roles: dict[str, tuple[str, ...]], version: object) -> _Expansion:
        roles = dict(self._configured_roles)
        for role_id, scopes in stored_roles.items():   # a role both configured and stored has both's scopes
            roles[role_id] = (*roles.get(role_id, ()), *scopes)
        return _Expansion(roles, version, self._configured_clients)

    def _current(self) -> _Expansion:
        """The expansion with the roles as they are now (rebuilt when the stored ones changed)."""
        if self._directory is None:
            return self._expansion
        if time.monotonic() < self._retry_at:
            return self._expansion
        try:
            version, stored = self._directory.roles()
        except Exception:
            # Storage cannot be read (yet): the configured roles serve, and the stored ones
            # read last, if any; a scope a stored role would grant is refused meanwhile.
            self._retry_at = time.monotonic() + UNREADABLE_PAUSE
            log.warning("the stored roles cannot be read; the configured ones serve for %d s", UNREADABLE_PAUSE,
                        exc_info=True)
            return self._expansion
        if version != self._expansion.version:
            with self._lock:
                if version != self._expansion.version:
                    self._expansion = self._expanded(stored, version)
        return self._expansion

    def configured_clients(self) -> dict[str, tuple[str, ...]]:
        """The configured clients' scopes by clientId (never their tokens)."""
        return {client_id: scopes for client_id, (_, scopes) in self._configured_clients.items()}

    @property
    def anonymous(self) -> Caller:
        return self._current().anonymous

    def expand(self, scopes: tuple[str, ...]) -> ScopeSet:
        """`scopes` with everything the roles grant (RoleExpansionTooLarge past its bound)."""
        return self._current().expand(tuple(scopes))

    def check_roles(self, stored: dict[str, Iterable[str]]) -> None:
        """RoleExpansionTooLarge if, were the stored roles `stored`, some role's expansion
        would grow past its bound (a role is checked so before it is written)."""
        expansion = self._expanded({role_id: tuple(scopes) for role_id, scopes in stored.items()}, None)
        for role_id in {**self._configured_roles, **stored}:
            expansion.expand((ASSUME + role_id,))

    def credentials(self, client_id: str, ext_text: str | None) -> Credentials:
        """The key a request naming `client_id` must be signed with, the scopes it then has,
        its `ext` applied, and when they expire; AuthenticationFailed if they cannot be used."""
        ext = parse_ext(ext_text)
        issuer = issuer_of(client_id, ext)
        expansion = self._current()
        client = expansion.configured.get(issuer) or self._stored(issuer, expansion)
        if client is None:
            raise AuthenticationFailed(f"Client with clientId '{issuer}' not found")
        if not ext:
            return Credentials(client.access_token, client.caller_scopes, client.expires)
        limited: Limited = apply_ext(client_id, issuer, client.access_token, client.scopes, ext,
                                     lambda scopes: expansion.expand(tuple(scopes)))
        return Credentials(limited.key, expansion.expand((*limited.scopes, ASSUME_ANONYMOUS)),
                           min(client.expires, limited.expires or NEVER))

    def _stored(self, client_id: str, expansion: _Expansion) -> _Client | None:
        stored = self._directory.client(client_id) if self._directory is not None else None
        if stored is None:
            return None
        if stored.disabled:
            raise AuthenticationFailed(f"Client '{client_id}' is disabled")
        if stored.expires < to_iso(utcnow()):
            raise AuthenticationFailed(f"Client '{client_id}' expired at {stored.expires}")
        return expansion.client(stored.access_token, stored.scopes, stored.expires)


def app_realm(settings: Settings, directory: Directory | None = None) -> Realm:
    """The app's realm: its settings' clients and roles, and the `directory`'s. The Queue's
    own client (what claims' credentials are signed with) is trusted unless its token is the
    sample's."""
    issuer = None
    if settings.credentials_access_token != DEFAULT_CREDENTIALS_TOKEN:
        issuer = (settings.credentials_client_id, settings.credentials_access_token)
    else:
        log.warning("QUEUE_CREDENTIALS_ACCESS_TOKEN is the sample's and STATIC_CLIENTS is empty: the "
                    "credentials claims hand out will not be accepted")
    return Realm.from_settings(settings.static_clients, settings.roles, settings.anonymous_scopes, issuer, directory)


def _json(text: str, what: str):
    try:
        return json.loads(text)
    except ValueError as error:
        raise ConfigurationError(f"{what} is not valid JSON: {error}") from None


def _entries(text: str, what: str, fields: tuple[str, str, str]) -> list[dict]:
    """The entries of a JSON list setting, each checked; a client id or role id once only."""
    if not text.strip():
        return []
    entries = _json(text, what)
    if not isinstance(entries, list):
        raise ConfigurationError(f"{what} must be a JSON list")
    key, secret_or_scopes = fields[0], fields[1]
    seen = set()
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get(key), str) or not _CLIENT_ID.fullmatch(entry[key]):
            raise ConfigurationError(f"{what}[{number}]: {key} must be a non-empty string of printable characters "
                                     "(no quote or backslash)")
        if entry[key] in seen:
            raise ConfigurationError(f"{what}[{number}]: {key} {entry[key]!r} appears twice")
        seen.add(entry[key])
        if secret_or_scopes == "accessToken" and not (isinstance(entry.get("accessToken"), str)
                                                      and valid_scope(entry["accessToken"]) and entry["accessToken"]):
            raise ConfigurationError(f"{what}[{number}] ({entry[key]}): accessToken must be a non-empty "
                                     "string of printable ASCII")
        entry["scopes"] = _scopes(entry.get("scopes"), f"{what}[{number}] ({entry[key]}).scopes")
    return entries


def _scopes(value, what: str) -> list[str]:
    if not isinstance(value, list) or not all(valid_scope(scope) for scope in value):
        raise ConfigurationError(f"{what} must be a list of scopes (printable ASCII strings)")
    return value
