"""Workers and task queues that went quiet are hidden once `expires` passes, then deleted by
the expiration sweep; activity and quarantine push the expiry forward."""

from datetime import timedelta

import pytest

from shared.domain.errors import NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.services.claims.task_queues import EXPIRY_MARGIN
from shared.services.claims.workers import WORKER_LIFETIME
from shared.storage.tables.claim_table import ClaimRow
from shared.storage.errors import ChangedSinceRead
from tests.conftest import make_task
from tests.services.sweeps.test_task_expiry import short_lived

LATER = timedelta(minutes=1)


def worker_ids(services, task_queue_id, now):
    return [worker["workerId"] for worker in services.workers.list(task_queue_id, "", 1000, None, now)[0]["workers"]]


def queue_ids(services, now):
    return [queue["taskQueueId"] for queue in services.task_queues.list("", 1000, now)[0]["taskQueues"]]


def test_a_worker_that_stopped_claiming_is_hidden_then_deleted(services, task_queue_id):
    services.work_claimer.claim_work(task_queue_id, "wg", "gone", 1)
    services.work_claimer.claim_work(task_queue_id, "wg", "busy", 1)
    busy = services.workers.worker_table.load(task_queue_id, "wg", "busy")
    lapse = parse_iso(busy.expires)
    services.workers.worked(busy, [], [], lapse - timedelta(hours=1))   # "busy" claims again a day later
    assert worker_ids(services, task_queue_id, utcnow()) == ["busy", "gone"]

    past = lapse + LATER
    assert worker_ids(services, task_queue_id, past) == ["busy"]        # lapsed: no longer listed
    with pytest.raises(NotFound):
        services.workers.get(task_queue_id, "wg", "gone", past)

    assert services.worker_expiry.sweep(now=past) == 1
    assert services.workers.worker_table.load(task_queue_id, "wg", "gone") is None
    assert services.workers.worker_table.load(task_queue_id, "wg", "busy") is not None    # its item was moved on
    assert services.worker_expiry.sweep(now=past) == 0

    assert services.worker_expiry.sweep(now=past + WORKER_LIFETIME) == 1
    assert services.workers.worker_table.load(task_queue_id, "wg", "busy") is None


def test_a_quarantined_worker_lives_until_its_quarantine_ends(services, task_queue_id):
    services.work_claimer.claim_work(task_queue_id, "wg", "bad", 1)
    until = utcnow() + timedelta(days=3)
    services.workers.quarantine(task_queue_id, "wg", "bad", to_iso(until), "broken disk", utcnow())

    assert services.worker_expiry.sweep(now=utcnow() + WORKER_LIFETIME + LATER) == 0
    assert services.workers.get(task_queue_id, "wg", "bad", until - LATER)["quarantineUntil"]
    assert services.worker_expiry.sweep(now=until + LATER) == 1
    assert services.workers.worker_table.load(task_queue_id, "wg", "bad") is None


def test_a_worker_that_returns_after_expiry_is_known_again(services, task_queue_id):
    services.work_claimer.claim_work(task_queue_id, "wg", "back", 1)
    services.worker_expiry.sweep(now=utcnow() + WORKER_LIFETIME + LATER)
    services.work_claimer.claim_work(task_queue_id, "wg", "back", 1)

    assert worker_ids(services, task_queue_id, utcnow()) == ["back"]
    assert services.worker_expiry.sweep(now=utcnow() + WORKER_LIFETIME + LATER) == 1


def test_a_worker_used_since_it_was_read_is_not_deleted(services, task_queue_id):
    services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)
    table = services.workers.worker_table
    stale = table.load(task_queue_id, "wg", "w")
    services.workers.claiming(stale, [ClaimRow(task_queue_id, "someTask", 0, "wg", "w", to_iso(utcnow()))], utcnow())

    with pytest.raises(ChangedSinceRead):
        table.delete(stale)
    assert table.load(task_queue_id, "wg", "w").recent_tasks == ({"taskId": "someTask", "runId": 0},)


def test_a_task_queue_goes_a_margin_after_its_last_task_has_expired(services, task_queue_id):
    services.task_calls.create(new_slugid(), make_task(task_queue_id, **short_lived(2)))
    assert task_queue_id in queue_ids(services, utcnow() + timedelta(seconds=4))

    past = utcnow() + timedelta(seconds=4) + EXPIRY_MARGIN
    assert task_queue_id not in queue_ids(services, past)
    with pytest.raises(NotFound):
        services.task_queues.get(task_queue_id, past)
    assert services.task_queue_expiry.sweep(now=past) == 1
    assert services.task_queues.queue_table.get(task_queue_id) is None


def test_a_later_task_keeps_its_task_queue(services, task_queue_id):
    services.task_calls.create(new_slugid(), make_task(task_queue_id, **short_lived(2)))
    services.task_calls.create(new_slugid(), make_task(task_queue_id))     # expires a year from now

    assert services.task_queue_expiry.sweep(now=utcnow() + timedelta(seconds=4) + EXPIRY_MARGIN) == 0
    stored = services.task_queues.queue_table.get(task_queue_id)
    assert parse_iso(stored.expires) > utcnow() + timedelta(days=300)
    assert services.task_queue_expiry.sweep(now=parse_iso(stored.expires) + LATER) == 1
    assert services.task_queues.queue_table.get(task_queue_id) is None
