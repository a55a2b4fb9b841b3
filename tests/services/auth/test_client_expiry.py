"""Clients made with deleteOnExpiration go when their expiry has passed; others stay, refused."""

from __future__ import annotations

from datetime import timedelta

from shared.domain.timestamps import to_iso, utcnow
from shared.services.auth.client_calls import ClientCalls
from shared.services.auth.client_expiry import ClientExpiry
from shared.services.auth.directory import Directory
from shared.services.secrets.encryption import SecretBox
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.client_table import ClientTable
from shared.storage.tables.role_table import RoleTable
from shared.auth.scopes import ScopeSet
from tests.memory_storage import MemoryAccount

BOX = SecretBox([("k1", b"k" * 32)])


def calls() -> ClientCalls:
    account = MemoryAccount("client-expiry")
    table = ClientTable(account)
    return ClientCalls(table, Directory(table, RoleTable(account), lambda: BOX), lambda: BOX, ScopeSet,
                       ClientExpiry(TimeIndex(account, "client-expires"), table))


def in_minutes(minutes: int) -> str:
    return to_iso(utcnow() + timedelta(minutes=minutes))


def test_a_client_that_goes_on_expiration_is_deleted_once_expired_and_others_stay():
    clients = calls()
    clients.create("goes", {"description": "d", "expires": in_minutes(1), "deleteOnExpiration": True})
    clients.create("stays", {"description": "d", "expires": in_minutes(1)})
    clients.create("extended", {"description": "d", "expires": in_minutes(1), "deleteOnExpiration": True})
    clients.update("extended", {"description": "d", "expires": in_minutes(60), "deleteOnExpiration": True},
                   lambda added: None)
    assert clients.expiry.sweep(now=utcnow()) == 0            # nothing has expired yet
    assert clients.expiry.sweep(now=utcnow() + timedelta(minutes=2)) == 1
    assert clients.table.load("goes") is None
    assert clients.table.load("stays") is not None and clients.table.load("extended") is not None
    assert clients.expiry.sweep(now=utcnow() + timedelta(minutes=61)) == 1
    assert clients.table.load("extended") is None
