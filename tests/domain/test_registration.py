"""Registration tokens: single use, bound to one worker, checked in constant time, never
stored or logged; the "mark used" is a conditional write, shown here against Azurite."""

import json
import logging
import threading
from datetime import timedelta

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceModifiedError
from azure.data.tables import TableServiceClient, UpdateMode

from shared.domain.timestamps import utcnow
from shared.domain.registration import (
    SECRET_LENGTH, RegistrationRefused, RegistrationToken, issue_token, new_secret, redeem_token, secret_matches,
)
from tests.conftest import unique_prefix

NOW = utcnow()
WORKER = {"worker_pool_id": "proj/linux", "worker_group": "local", "worker_id": "local-1"}


def issued():
    return issue_token(*WORKER.values(), now=NOW, lifetime=timedelta(minutes=15))


def always(record):
    return True


def test_tokens_are_taskcluster_secrets_and_only_their_digest_is_kept():
    token = issued()
    assert len(token.token) == SECRET_LENGTH and token.token.replace("-", "").replace("_", "").isalnum()
    assert token.token not in json.dumps(token.record.to_json()) and token.token not in repr(token)
    assert RegistrationToken.from_json(token.record.to_json()) == token.record
    assert len({new_secret() for _ in range(1000)}) == 1000


def test_the_right_token_registers_its_worker_once():
    token = issued()
    used = redeem_token(token.record, token.token, now=NOW, mark_used=always, **WORKER)
    assert used.used and used.digest == token.record.digest
    with pytest.raises(RegistrationRefused, match="has been used already"):
        redeem_token(used, token.token, now=NOW, mark_used=always, **WORKER)


@pytest.mark.parametrize("presented", ["x" * SECRET_LENGTH, "", None, 44])
def test_a_wrong_token_is_refused_without_being_echoed(presented):
    with pytest.raises(RegistrationRefused, match="^Bad registration token for worker proj/linux/local/local-1$"):
        redeem_token(issued().record, presented, now=NOW, mark_used=always, **WORKER)


def test_a_token_for_another_worker_is_refused():
    mine, theirs = issued(), issue_token("proj/linux", "local", "local-2", NOW, timedelta(minutes=15))
    with pytest.raises(RegistrationRefused, match="Bad registration token"):
        redeem_token(mine.record, theirs.token, now=NOW, mark_used=always, **WORKER)
    with pytest.raises(RegistrationRefused, match="not proj/linux/local/local-1's"):
        redeem_token(theirs.record, theirs.token, now=NOW, mark_used=always, **WORKER)
    with pytest.raises(RegistrationRefused, match="was given no registration token"):
        redeem_token(None, mine.token, now=NOW, mark_used=always, **WORKER)


def test_an_expired_token_is_refused_and_nothing_is_written():
    token = issued()
    writes = []
    with pytest.raises(RegistrationRefused, match="expired at"):
        redeem_token(token.record, token.token, now=NOW + timedelta(minutes=15), mark_used=writes.append, **WORKER)
    assert writes == []


def test_the_comparison_is_hmacs_constant_time_one(monkeypatch):
    calls = []
    import hmac
    original = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append((a, b)) or original(a, b))
    token = issued()
    assert secret_matches(token.token, token.record.digest) and calls


def test_two_registrations_racing_with_one_token_one_wins_through_the_conditional_write(azurite, caplog):
    """The worker's record in a table: each registration reads it, checks the token and
    writes it back used under the ETag it read. Exactly one write succeeds."""
    caplog.set_level(logging.DEBUG)
    service = TableServiceClient.from_connection_string(azurite.connection_string)
    table = service.create_table(unique_prefix() + "workers")
    token = issued()
    table.create_entity({"PartitionKey": "proj/linux".replace("/", "!"), "RowKey": "local!local-1",
                         "registration": json.dumps(token.record.to_json()), "state": "requested"})
    both_read = threading.Barrier(2)
    outcomes = []

    def register():
        entity = table.get_entity("proj!linux", "local!local-1")
        both_read.wait()

        def mark_used(used: RegistrationToken) -> bool:
            entity["registration"], entity["state"] = json.dumps(used.to_json()), "running"
            try:
                table.update_entity(entity, mode=UpdateMode.REPLACE, etag=entity.metadata["etag"],
                                    match_condition=MatchConditions.IfNotModified)
                return True
            except ResourceModifiedError:
                return False
        try:
            record = RegistrationToken.from_json(json.loads(entity["registration"]))
            redeem_token(record, token.token, now=NOW, mark_used=mark_used, **WORKER)
            outcomes.append("registered")
        except RegistrationRefused as refused:
            outcomes.append(refused.message)

    threads = [threading.Thread(target=register) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["The registration token of worker proj/linux/local/local-1 has been used already",
                                "registered"]
    stored = table.get_entity("proj!linux", "local!local-1")
    assert stored["state"] == "running" and json.loads(stored["registration"])["used"] is True
    assert token.token not in caplog.text
    service.delete_table(table.table_name)
