"""A task queue's row: kept as long as its tasks, without a write per createTask."""

import time
from datetime import timedelta

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from tests.conftest import make_task


def _counting_queue_rows(services, monkeypatch) -> list[str]:
    table, calls = services.task_queues.queue_table, []
    for name in ("get", "put"):
        real = getattr(table, name)
        monkeypatch.setattr(table, name, lambda *args, real=real, name=name: calls.append(name) or real(*args))
    return calls


def test_tasks_stamped_one_after_another_do_not_each_write_the_queue_row(services, task_queue_id, monkeypatch):
    """Clients stamp `created`, `deadline` and so `expires` per task: each task expires a moment
    after the one before, which made every createTask read and write the queue's row."""
    calls = _counting_queue_rows(services, monkeypatch)
    created = []
    for _ in range(5):
        task_id = new_slugid()
        services.task_calls.create(task_id, make_task(task_queue_id))
        created.append(services.task_calls.definition(task_id)["expires"])
        time.sleep(0.002)
    assert calls == ["get", "put"]   # the first task's, then none
    stored = services.task_queues.queue_table.get(task_queue_id)
    assert parse_iso(stored.expires) >= max(map(parse_iso, created))   # listed as long as its last task lives


def test_a_task_expiring_past_the_margin_extends_the_queue_row(services, task_queue_id, monkeypatch):
    services.task_calls.create(new_slugid(), make_task(task_queue_id))
    calls = _counting_queue_rows(services, monkeypatch)
    later = to_iso(utcnow() + timedelta(days=800))
    services.task_calls.create(new_slugid(), make_task(task_queue_id, expires=later))
    assert calls == ["get", "put"]
    assert parse_iso(services.task_queues.queue_table.get(task_queue_id).expires) >= parse_iso(later)


def test_claims_after_a_task_write_nothing_more(services, task_queue_id, monkeypatch):
    """claimWork keeps its queue a day past now: the tasks' expiry already covers that."""
    for _ in range(3):
        services.task_calls.create(new_slugid(), make_task(task_queue_id))
    calls = _counting_queue_rows(services, monkeypatch)
    for number in range(3):
        services.work_claimer.claim_work(task_queue_id, "wg", f"w{number}", 1)
    assert calls == []
