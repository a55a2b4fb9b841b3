"""The audit history in the services (on the in-memory account): what each service records
as Taskcluster does, the purge after 30 days (a controlled clock, as the other sweeps' tests),
and an entry that cannot be written leaving the change it records standing."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from shared.domain.timestamps import to_iso, utcnow
from shared.services.auth.audit_history import RETENTION, AuditHistory, AuditHistoryPurge
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.audit_table import AuditTable
from tests.conftest import memory_services
from tests.memory_storage import MemoryAccount

START = datetime(2030, 1, 1, tzinfo=timezone.utc)
POOL = {"providerId": "static", "description": "d", "owner": "o@example.com", "emailOnError": False,
        "config": {"workerConfig": {}}}
HOOK = {"metadata": {"name": "h", "description": "d", "owner": "o@example.com", "emailOnError": False},
        "task": {"payload": {}}}


def actions(services, entity_type: str, entity_id: str) -> list[tuple[str, str]]:
    page, _ = services.audit_history.entity_history(entity_type, entity_id, "", 100)
    return [(entry["actionType"], entry["clientId"]) for entry in page["auditHistory"]]


def in_hours(hours: float) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def test_entries_are_purged_once_older_than_the_retention():
    account, now = MemoryAccount("audit-purge"), [START]
    table, index = AuditTable(account), TimeIndex(account, "audit-expires", bucket=timedelta(days=1))
    audit, purge = AuditHistory(table, index, lambda: now[0]), AuditHistoryPurge(index, table)
    audit.record("role", "r", "alice", "created")
    now[0] = START + timedelta(days=10)
    audit.record("role", "r", "bob", "updated")
    assert purge.sweep(now=START + RETENTION - timedelta(minutes=1)) == 0
    assert purge.sweep(now=START + RETENTION + timedelta(minutes=1)) == 1
    assert [entry["clientId"] for entry in audit.entity_history("role", "r", "", 10)[0]["auditHistory"]] == ["bob"]
    assert audit.client_history("alice", "", 10) == ({"auditHistory": []}, None)   # both rows went
    assert purge.sweep(now=START + timedelta(days=41)) == 1
    assert audit.entity_history("role", "r", "", 10) == ({"auditHistory": []}, None)


def test_the_expiration_timer_runs_the_purge():
    services = memory_services()
    assert services.audit_purge in services.sweeps


def test_each_service_records_what_taskcluster_records():
    services = memory_services()
    services.roles.create("r", {"description": "d", "scopes": []}, by="alice")
    services.roles.create("r", {"description": "d", "scopes": []}, by="alice")   # the same again: recorded again
    services.roles.delete("gone", by="alice")                                     # absent: recorded all the same
    services.hooks.create("g", "h/1", HOOK, by="bob")
    services.hooks.create("g", "h/1", HOOK, by="bob")                             # the same again: not recorded
    services.hooks.update("g", "h/1", HOOK, by="bob")
    services.hooks.remove("g", "h/1", by="carol")
    services.worker_manager.pools.create("p/one", POOL, utcnow(), by="bob")
    services.worker_manager.pools.create("p/one", POOL, utcnow(), by="bob")       # a retry: not recorded
    services.worker_manager.pools.delete("p/one", utcnow(), by="carol")
    assert actions(services, "role", "r") == [("created", "alice"), ("created", "alice")]
    assert actions(services, "role", "gone") == [("deleted", "alice")]
    assert actions(services, "hook", "g/h/1") == [("created", "bob"), ("updated", "bob"), ("deleted", "carol")]
    assert actions(services, "worker-pool", "p/one") == [("created", "bob"), ("deleted", "carol")]


def test_a_secret_is_recorded_created_updated_deleted_and_expired_by_the_sweep():
    services = memory_services()
    services.secrets.set("s", {"secret": {"v": 1}, "expires": in_hours(1)}, by="alice")
    services.secrets.set("s", {"secret": {"v": 2}, "expires": in_hours(1)}, by="bob")
    services.secrets.remove("s", by="carol")
    services.secrets.set("lapsing", {"secret": {}, "expires": in_hours(-1)}, by="alice")
    services.secrets.set("lapsing", {"secret": {}, "expires": in_hours(-1)}, by="alice")   # lapsed: made anew
    assert services.secret_expiry.sweep(now=utcnow() + timedelta(minutes=1)) == 1
    assert actions(services, "secret", "s") == [("created", "alice"), ("updated", "bob"), ("deleted", "carol")]
    assert actions(services, "secret", "lapsing") == [("created", "alice"), ("created", "alice"),
                                                      ("expired", "static/taskcluster/secrets")]


def test_an_entry_not_written_leaves_the_change_standing_and_is_logged_without_the_value(caplog):
    services = memory_services()

    def broken(entry):
        raise ConnectionError("storage unreachable")
    services.audit_history.table.add = broken
    with caplog.at_level(logging.WARNING, logger="auth.audit"):
        assert services.secrets.set("kept", {"secret": {"password": "hunter2-value"}, "expires": in_hours(1)},
                                    by="alice") == {}
    assert services.secrets.get("kept")["secret"] == {"password": "hunter2-value"}
    assert "created of secret 'kept' by alice not recorded (ConnectionError)" in caplog.text
    assert "hunter2" not in caplog.text
