"""The AuditHistory table on Azurite and on the in-memory account: an entry read by its entity
and by the client who acted, oldest first, a page at a time, whatever characters the ids
hold; `remove` deletes both rows."""

from __future__ import annotations

from shared.storage.tables.audit_table import AuditEntry, AuditTable, client_partition, entity_partition


def entry(number: int, entity_id: str = "project/ci", client_id: str = "static/root", action: str = "updated"):
    return AuditEntry(f"2030-01-01T00:00:{number:02d}.000000.abcd{number:04d}", "client", entity_id, client_id, action,
                      f"2030-01-01T00:00:{number:02d}.000Z")


def all_of(table: AuditTable, partition: str, limit: int) -> tuple[list[AuditEntry], int]:
    """Every entry of a partition through pages of `limit`, and how many pages it took."""
    found, after, pages = [], "", 0
    while True:
        page, after = table.page(partition, after, limit)
        found, pages = found + page, pages + 1
        if after is None:
            return found, pages


def test_entries_are_read_by_entity_and_by_client_oldest_first_in_pages(account):
    table = AuditTable(account)
    entries = [entry(number, client_id="static/root" if number % 2 else "other") for number in (3, 1, 4, 2, 5)]
    for each in entries:
        table.add(each)
    table.add(entries[0])   # written again: still one entry
    table.add(entry(6, entity_id="project/other"))
    by_entity, pages = all_of(table, entity_partition("client", "project/ci"), 2)
    assert [found.key for found in by_entity] == sorted(each.key for each in entries) and pages == 3
    assert by_entity[0] == entry(1)
    by_client, _ = all_of(table, client_partition("static/root"), 10)
    assert [found.created[17:19] for found in by_client] == ["01", "03", "05", "06"]
    assert table.page(entity_partition("role", "project/ci"), "", 10) == ([], None)   # another type
    assert table.page(entity_partition("client", "nobody"), "", 10) == ([], None)


def test_any_printable_id_is_kept_and_remove_deletes_both_rows(account):
    table = AuditTable(account)
    odd = AuditEntry("2030-01-01T00:00:00.000000.00000001", "secret", "a/b c#d?e%f\\g." + "~" * 600,
                     "x/y#z" + "w" * 600, "created", "2030-01-01T00:00:00.000Z")
    table.add(odd)
    assert table.page(entity_partition("secret", odd.entity_id), "", 5) == ([odd], None)
    assert table.page(client_partition(odd.client_id), "", 5) == ([odd], None)
    table.remove([(odd.partitions, odd.key)])
    table.remove([(odd.partitions, odd.key)])   # gone already: fine
    assert table.page(entity_partition("secret", odd.entity_id), "", 5) == ([], None)
    assert table.page(client_partition(odd.client_id), "", 5) == ([], None)
