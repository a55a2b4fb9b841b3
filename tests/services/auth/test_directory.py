"""The realm's directory of stored clients and roles, on the in-memory storage: how long what
it read is used, what a change made here or elsewhere does, and a failed read of the roles."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from shared.auth.clients import Realm
from shared.auth.errors import AuthenticationFailed
from shared.services.auth import directory as directory_module
from shared.services.auth.audit_history import AuditHistory
from shared.services.auth.client_calls import ClientCalls
from shared.services.auth.client_expiry import ClientExpiry
from shared.services.auth.directory import Directory
from shared.services.auth.role_calls import RoleCalls
from shared.services.secrets.encryption import SecretBox
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.audit_table import AuditTable
from shared.storage.tables.client_table import ClientTable
from shared.storage.tables.role_table import RoleTable
from tests.memory_storage import MemoryAccount

BOX = SecretBox([("k1", b"k" * 32)])
LATER = "3000-01-01T00:00:00.000Z"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parts():
    """Two processes' directories and realms on one account (another instance of the app),
    the first with the calls that change clients and roles, and their clock."""
    account, clock = MemoryAccount("directory"), Clock()
    directories = [Directory(ClientTable(account), RoleTable(account), lambda: BOX, clock) for _ in range(2)]
    realms = [Realm({}, {}, (), directory) for directory in directories]
    audit = AuditHistory(AuditTable(account), TimeIndex(account, "audit-expires"))
    clients = ClientCalls(ClientTable(account), directories[0], lambda: BOX, realms[0].expand,
                          ClientExpiry(TimeIndex(account, "client-expires"), ClientTable(account), audit), audit)
    roles = RoleCalls(RoleTable(account), directories[0], realms[0].expand, realms[0].check_roles, audit)
    return clients, roles, realms, clock


def test_a_role_is_seen_here_at_once_and_elsewhere_within_its_freshness(parts):
    clients, roles, (here, elsewhere), clock = parts
    assert not elsewhere.expand(("assume:project:a",)).has("secrets:get:a")   # read now: no roles yet
    roles.create("project:a", {"description": "r", "scopes": ["secrets:get:a"]}, by="tests")
    assert here.expand(("assume:project:a",)).has("secrets:get:a")
    assert not elsewhere.expand(("assume:project:a",)).has("secrets:get:a")
    clock.now += directory_module.ROLES_FRESH
    assert elsewhere.expand(("assume:project:a",)).has("secrets:get:a")


def test_a_disabled_client_is_refused_here_at_once_and_elsewhere_within_its_freshness(parts):
    clients, roles, (here, elsewhere), clock = parts
    token = clients.create("ci", {"description": "d", "expires": LATER, "scopes": ["queue:get-task:*"]},
                           by="tests")["accessToken"]
    assert here.credentials("ci", None).key == token == elsewhere.credentials("ci", None).key
    clients.disable("ci", by="tests")
    with pytest.raises(AuthenticationFailed, match="disabled"):
        here.credentials("ci", None)
    assert elsewhere.credentials("ci", None).key == token
    clock.now += directory_module.CLIENT_FRESH
    with pytest.raises(AuthenticationFailed, match="disabled"):
        elsewhere.credentials("ci", None)


def test_a_client_found_missing_is_looked_for_again_soon(parts):
    clients, roles, (here, elsewhere), clock = parts
    with pytest.raises(AuthenticationFailed, match="not found"):
        elsewhere.credentials("new", None)
    clients.create("new", {"description": "d", "expires": LATER}, by="tests")
    clock.now += directory_module.ABSENT_FRESH
    assert elsewhere.credentials("new", None).expires == LATER


def test_the_roles_read_before_serve_while_storage_fails(parts, monkeypatch):
    clients, roles, (here, elsewhere), clock = parts
    roles.create("project:a", {"description": "r", "scopes": ["secrets:get:a"]}, by="tests")
    assert elsewhere.expand(("assume:project:a",)).has("secrets:get:a")
    monkeypatch.setattr(RoleTable, "all", lambda self: (_ for _ in ()).throw(ConnectionError("storage is down")))
    clock.now += directory_module.ROLES_FRESH
    assert elsewhere.expand(("assume:project:a",)).has("secrets:get:a")


def test_the_access_token_is_stored_sealed(parts):
    clients, roles, realms, clock = parts
    token = clients.create("sealed", {"description": "d", "expires": LATER}, by="tests")["accessToken"]
    stored = clients.table.load("sealed")
    assert token not in stored.sealed_token and stored.sealed_token.startswith("k1:")


def test_a_client_long_unused_has_its_use_recorded(parts):
    clients, roles, (here, elsewhere), clock = parts
    clients.create("old", {"description": "d", "expires": LATER}, by="tests")
    table = clients.table
    week_ago = "2026-01-01T00:00:00.000Z"
    table.save(replace(table.load("old"), last_date_used=week_ago))
    clock.now += directory_module.CLIENT_FRESH
    elsewhere.credentials("old", None)
    for _ in range(100):   # written after the request, in the background
        if table.load("old").last_date_used != week_ago:
            break
        time.sleep(0.05)
    assert table.load("old").last_date_used > week_ago
