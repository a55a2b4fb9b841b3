"""Clients made with deleteOnExpiration go when their expiry has passed (recorded in the audit
history as `expired` by `static/taskcluster/auth`); others stay, refused."""

from __future__ import annotations

from datetime import timedelta

from shared.domain.timestamps import to_iso, utcnow
from shared.services.auth.audit_history import AuditHistory
from shared.services.auth.client_calls import ClientCalls
from shared.services.auth.client_expiry import ClientExpiry
from shared.services.auth.directory import Directory
from shared.services.secrets.encryption import SecretBox
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.audit_table import AuditTable
from shared.storage.tables.client_table import ClientTable
from shared.storage.tables.role_table import RoleTable
from shared.auth.scopes import ScopeSet
from tests.memory_storage import MemoryAccount

BOX = SecretBox([("k1", b"k" * 32)])


def calls() -> ClientCalls:
    account = MemoryAccount("client-expiry")
    table = ClientTable(account)
    audit = AuditHistory(AuditTable(account), TimeIndex(account, "audit-expires"))
    return ClientCalls(table, Directory(table, RoleTable(account), lambda: BOX), lambda: BOX, ScopeSet,
                       ClientExpiry(TimeIndex(account, "client-expires"), table, audit), audit)


def in_minutes(minutes: int) -> str:
    return to_iso(utcnow() + timedelta(minutes=minutes))


def test_a_client_that_goes_on_expiration_is_deleted_once_expired_and_others_stay():
    clients = calls()
    clients.create("goes", {"description": "d", "expires": in_minutes(1), "deleteOnExpiration": True}, by="tests")
    clients.create("stays", {"description": "d", "expires": in_minutes(1)}, by="tests")
    clients.create("extended", {"description": "d", "expires": in_minutes(1), "deleteOnExpiration": True}, by="tests")
    clients.update("extended", {"description": "d", "expires": in_minutes(60), "deleteOnExpiration": True},
                   lambda added: None, by="tests")
    assert clients.expiry.sweep(now=utcnow()) == 0            # nothing has expired yet
    assert clients.expiry.sweep(now=utcnow() + timedelta(minutes=2)) == 1
    assert clients.table.load("goes") is None
    assert clients.table.load("stays") is not None and clients.table.load("extended") is not None
    assert clients.expiry.sweep(now=utcnow() + timedelta(minutes=61)) == 1
    assert clients.table.load("extended") is None
    history = clients.audit.entity_history("client", "extended", "", 10)[0]["auditHistory"]
    assert [(entry["actionType"], entry["clientId"]) for entry in history] == [
        ("created", "tests"), ("updated", "tests"), ("expired", "static/taskcluster/auth")]
    assert [entry["actionType"] for entry in clients.audit.entity_history("client", "stays", "", 10)[0][
        "auditHistory"]] == ["created"]
