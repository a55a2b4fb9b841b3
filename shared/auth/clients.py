"""The clients a deployment trusts, its roles, and what a caller without credentials may do.

Configured in Taskcluster's formats: `STATIC_CLIENTS` is a JSON list of
`{clientId, accessToken, scopes, description?}`, the roles a JSON list of
`{roleId, scopes, description?}`. Every caller, with credentials or without, also holds
`assume:anonymous`: the role `anonymous` grants the anonymous scopes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from shared.auth.certificates import Limited, apply_ext, issuer_of, parse_ext
from shared.auth.errors import AuthenticationFailed
from shared.auth.roles import Roles
from shared.auth.scopes import ScopeSet, valid_scope

ANONYMOUS_ROLE = "anonymous"
ASSUME_ANONYMOUS = "assume:" + ANONYMOUS_ROLE
# Taskcluster's documented `anonymous` role of a public deployment, its Queue, hooks and index
# parts (reading tasks, groups, workers, public artifacts, hooks and their fires; finding and
# listing indexed tasks), and reading task graphs (their tasks). Secrets' names are not public.
DEFAULT_ANONYMOUS_SCOPES = (
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


@dataclass(frozen=True)
class Caller:
    """Who made a request: `client_id` is None without credentials."""

    client_id: str | None
    scopes: ScopeSet
    scheme: str = "none"   # "hawk", "bewit" or "none"


@dataclass(frozen=True)
class _Client:
    access_token: str
    scopes: ScopeSet        # expanded, without the anonymous role (what it may issue)
    caller_scopes: ScopeSet  # with it: what a request signed with its own token may do


class Realm:
    def __init__(self, clients: dict[str, tuple[str, Iterable[str]]], roles: dict[str, Iterable[str]],
                 anonymous_scopes: Iterable[str]) -> None:
        roles = dict(roles)
        roles[ANONYMOUS_ROLE] = [*roles.get(ANONYMOUS_ROLE, ()), *anonymous_scopes]
        self.roles = Roles(roles)
        self.expand = lru_cache(maxsize=4096)(self._expand)
        self._clients = {client_id: _Client(token, self.expand(tuple(scopes)),
                                            self.expand((*scopes, ASSUME_ANONYMOUS)))
                         for client_id, (token, scopes) in clients.items()}
        self.anonymous = Caller(None, self.expand((ASSUME_ANONYMOUS,)))

    @classmethod
    def from_settings(cls, static_clients: str, roles: str, anonymous_scopes: str,
                      issuer: tuple[str, str] | None = None) -> Realm:
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
        return cls(clients, role_map, anonymous)

    def _expand(self, scopes: tuple[str, ...]) -> ScopeSet:
        return ScopeSet(self.roles.expand_all(scopes))

    def credentials(self, client_id: str, ext_text: str | None) -> tuple[str, ScopeSet]:
        """The key a request naming `client_id` must be signed with and the scopes it
        then has, its `ext` applied; AuthenticationFailed if they cannot be used."""
        ext = parse_ext(ext_text)
        issuer = issuer_of(client_id, ext)
        client = self._clients.get(issuer)
        if client is None:
            raise AuthenticationFailed(f"Client with clientId '{issuer}' not found")
        if not ext:
            return client.access_token, client.caller_scopes
        limited: Limited = apply_ext(client_id, issuer, client.access_token, client.scopes, ext,
                                     lambda scopes: self.expand(tuple(scopes)))
        return limited.key, self.expand((*limited.scopes, ASSUME_ANONYMOUS))


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
