"""The hooks service in process, on storage in memory: a removal whose hook-deleted cannot be
published yet (the bus is down) leaves a tombstone that reads as no hook and is buried once
the event is out; a hook's trigger token is sealed at rest, for that hook only, and opens
after a key rotation."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from shared.domain.errors import NotFound
from shared.services.hooks.hooks import BURY_AFTER
from shared.services.secrets.encryption import CannotOpen, new_key_entry
from tests.conftest import memory_services
from tests.memory_storage import MemoryAccount

NOW = datetime(2031, 3, 1, tzinfo=timezone.utc)
HOOK = {"metadata": {"name": "n", "description": "d", "owner": "o@example.com"},
        "task": {"taskQueueId": "prov/wt", "payload": {}}}


def at(services, moment: datetime):
    services.hooks.clock = services.hooks.firing.clock = lambda: moment
    return services


def test_a_removal_while_the_bus_is_down_is_announced_and_finished_later():
    services = at(memory_services(), NOW)
    services.hooks.create("g", "h", HOOK, by="tests")
    services.bus.down = True
    assert services.hooks.remove("g", "h", by="tests") == {}
    tombstone = services.hooks.table.get("g", "h")
    assert tombstone.deleted and [event.exchange for event in tombstone.outbox] == ["hook-deleted"]
    with pytest.raises(NotFound):
        services.hooks.get("g", "h")
    assert services.hooks.groups() == {"groups": ["g"]}       # its row goes with the tombstone

    services.bus.down = False
    services.event_publisher.retry_refused()                  # this process retries what the bus refused
    assert [event.exchange for event in services.bus.published] == ["hook-created", "hook-deleted"]
    assert services.hook_scheduler.sweep(NOW + BURY_AFTER + timedelta(seconds=1)) == 1
    assert services.hooks.table.get("g", "h") is None and services.hooks.groups() == {"groups": []}


def test_a_hook_made_again_over_a_tombstone_keeps_its_unpublished_event():
    services = at(memory_services(), NOW)
    services.hooks.create("g", "h", HOOK, by="tests")
    services.bus.down = True
    services.hooks.remove("g", "h", by="tests")
    services.hooks.create("g", "h", HOOK, by="tests")
    again = services.hooks.table.get("g", "h")
    assert not again.deleted and [event.exchange for event in again.outbox] == ["hook-deleted", "hook-created"]
    assert services.hooks.get("g", "h")["hookId"] == "h"


def test_a_trigger_token_is_sealed_for_its_hook_and_opens_after_a_key_rotation():
    account, old, new = MemoryAccount("sealing"), new_key_entry("old"), new_key_entry("new")
    before = at(memory_services(account=account, secrets_encryption_keys=old), NOW)
    before.hooks.create("g", "a", HOOK, by="tests")
    before.hooks.create("g", "b", HOOK, by="tests")
    token = before.hooks.token("g", "a")["token"]
    stored = before.hooks.table.get("g", "a")
    assert token not in stored.trigger_token and stored.trigger_token.startswith("old:")

    # Copied onto another hook's row, a sealed token does not open there.
    other = before.hooks.table.get("g", "b")
    with pytest.raises(CannotOpen):
        before.hooks.secrets.token(replace(other, trigger_token=stored.trigger_token))

    after = at(memory_services(account=account, secrets_encryption_keys=f"{new},{old}"), NOW)
    assert after.hooks.token("g", "a")["token"] == token
    after.hooks.update("g", "a", HOOK, by="tests")                         # written again: sealed under the new key
    assert after.hooks.table.get("g", "a").trigger_token.startswith("new:")
    assert after.hooks.token("g", "a")["token"] == token
    resealed = after.hooks.table.get("g", "a")
    assert after.hooks.secrets.token_matches(resealed, token) and not after.hooks.secrets.token_matches(resealed, "x")
