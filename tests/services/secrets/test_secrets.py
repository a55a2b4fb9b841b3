"""The secrets service on an in-memory storage account: values sealed at rest, key rotation,
expiry (404, then deleted by the expiration sweep unless set again), a service without a key,
and what it refuses."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from shared.domain.errors import InvalidInput, NotFound
from shared.domain.timestamps import to_iso, utcnow
from shared.services.secrets.encryption import new_key_entry
from shared.services.secrets.secrets import NotConfigured
from tests.conftest import SECRETS_KEYS, memory_services
from tests.memory_storage import MemoryAccount


def in_hours(hours: float) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def stored_rows(services) -> list[dict]:
    return [dict(row) for row in services.secrets.table._table.query_entities("RowKey eq 'secret'")]


def test_a_value_is_sealed_at_rest_and_opened_for_get(services):
    services.secrets.set("a/b", {"secret": {"password": "plain-text-value"}, "expires": in_hours(1)}, by="tests")
    rows = stored_rows(services)
    assert len(rows) == 1 and "plain-text-value" not in json.dumps(rows, default=str)
    assert rows[0]["keyId"] == "tests"
    assert services.secrets.get("a/b")["secret"] == {"password": "plain-text-value"}


def test_keys_rotate_old_secrets_still_open_and_new_writes_use_the_newest():
    account = MemoryAccount("rotation")
    before = memory_services(account=account)
    before.secrets.set("kept", {"secret": {"v": "old"}, "expires": in_hours(1)}, by="tests")
    after = memory_services(account=account, secrets_encryption_keys=f"{new_key_entry('next')},{SECRETS_KEYS}")
    assert after.secrets.get("kept")["secret"] == {"v": "old"}
    after.secrets.set("kept", {"secret": {"v": "resealed"}, "expires": in_hours(1)}, by="tests")
    assert [row["keyId"] for row in stored_rows(after)] == ["next"]
    with pytest.raises(Exception) as refused:   # the old process lacks the new key: it says so, no value shown
        before.secrets.get("kept")
    assert "cannot be opened" in str(refused.value) and "resealed" not in str(refused.value)


def test_an_expired_secret_is_refused_then_swept_unless_set_again(services):
    services.secrets.set("old", {"secret": {}, "expires": in_hours(-1)}, by="tests")
    services.secrets.set("renewed", {"secret": {}, "expires": in_hours(-1)}, by="tests")
    with pytest.raises(NotFound):   # absent, as Taskcluster's query has it
        services.secrets.get("old")
    services.secrets.set("renewed", {"secret": {"v": 2}, "expires": in_hours(48)}, by="tests")
    assert services.secret_expiry.sweep(now=utcnow()) == 1
    with pytest.raises(NotFound):
        services.secrets.get("old")
    assert services.secrets.get("renewed")["secret"] == {"v": 2}
    assert services.secrets.list("", 10)[0]["secrets"] == ["renewed"]


def test_without_a_key_the_service_says_so_and_lists_what_it_has():
    account = MemoryAccount("no-key")
    memory_services(account=account).secrets.set("x", {"secret": {}, "expires": in_hours(1)}, by="tests")
    services = memory_services(account=account, secrets_encryption_keys="")
    for call in (lambda: services.secrets.set("y", {"secret": {}, "expires": in_hours(1)}, by="tests"),
                 lambda: services.secrets.get("x")):
        with pytest.raises(NotConfigured) as refused:
            call()
        assert "SECRETS_ENCRYPTION_KEYS" in refused.value.message and refused.value.code == "ServiceUnavailable"
    assert services.secrets.list("", 10) == ({"secrets": ["x"]}, None)
    assert memory_services(secrets_encryption_keys="k:not-base64").secrets._box is None   # logged, not raised


def test_a_value_too_large_for_a_row_is_refused_naming_the_field(services):
    with pytest.raises(InvalidInput) as refused:
        services.secrets.set("big", {"secret": {"blob": "x" * 400_000}, "expires": in_hours(1)}, by="tests")
    assert refused.value.message.startswith("secret: ") and "xxxx" not in refused.value.message
    assert stored_rows(services) == []


def test_names_page_in_order(services):
    for name in ("c", "a/1", "b", "a/2"):
        services.secrets.set(name, {"secret": {}, "expires": in_hours(1)}, by="tests")
    first, after = services.secrets.list("", 3)
    assert first["secrets"] == ["a/1", "a/2", "b"] and after == "b"
    assert services.secrets.list(after, 3) == ({"secrets": ["c"]}, None)
