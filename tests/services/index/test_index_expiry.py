"""Index entries and their namespaces deleted by the expiration sweep once they lapsed, unless
replaced or extended since; a namespace stays while an entry below it lives."""

from __future__ import annotations

from datetime import timedelta

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow


def insert(services, path: str, days: float) -> str:
    task_id = new_slugid()
    services.index.insert(path, {"taskId": task_id, "rank": 0, "data": {}, "expires": to_iso(utcnow() + timedelta(days=days))})
    return task_id


def rows(services) -> set[str]:
    """Every entry and namespace the Index table holds, expired or not."""
    return {row["PartitionKey"] + "/" + row["RowKey"] for row in services.index.table._table.query_entities(
        "PartitionKey ge ''")}


def test_lapsed_entries_and_namespaces_are_deleted_and_live_ones_kept(services):
    insert(services, "old.build.linux", days=-3)
    insert(services, "mixed.gone", days=-3)
    kept = insert(services, "mixed.kept", days=30)
    insert(services, "renewed.x", days=-3)
    renewed = insert(services, "renewed.x", days=30)        # replaced before the sweep
    assert services.index_expiry.sweep(now=utcnow()) == 4   # old.build.linux, old.build, old, mixed.gone
    assert rows(services) == {".mixed/t:kept", "./n:mixed", ".renewed/t:x", "./n:renewed"}
    assert services.index.find("mixed.kept")["taskId"] == kept and services.index.find("renewed.x")["taskId"] == renewed
    # What was kept comes due again at its own expiry, and goes then.
    assert services.index_expiry.sweep(now=utcnow() + timedelta(days=40)) == 4
    assert rows(services) == set()
