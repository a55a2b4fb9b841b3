"""Quarantine against a claimWork already under way: the claims' transaction, conditional
on the worker's row, is refused, and nothing is claimed."""

import threading
import time
from datetime import timedelta

from shared.domain import lifecycle
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import make_task, memory_services, two_processes


def test_a_claim_that_raced_the_quarantine_claims_nothing(task_queue_id):
    services = memory_services(claim_work_wait=10)
    services.workers.arrive(task_queue_id, "wg", "racer", utcnow())      # a worker known from earlier claims
    answers = []
    polling = threading.Thread(target=lambda: answers.append(
        services.work_claimer.claim_work(task_queue_id, "wg", "racer", 1)))
    polling.start()
    time.sleep(0.5)                                                      # it read the worker: not quarantined
    services.workers.quarantine(task_queue_id, "wg", "racer", to_iso(utcnow() + timedelta(hours=1)), "", utcnow())
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))             # the long poll wakes and tries it
    polling.join(timeout=20)

    assert answers == [{"tasks": []}]
    assert [run["state"] for run in services.task_calls.status(task_id)["runs"]] == ["pending"]   # never claimed
    assert services.task_queues.counts(task_queue_id)["claimedTasks"] == 0
    assert services.workers.get(task_queue_id, "wg", "racer", utcnow())["recentTasks"] == []


def test_a_quarantine_by_another_process_keeps_work_from_the_worker(task_queue_id):
    """A process starts a worker's claimWork from the row as it last wrote it: a quarantine
    written since by another process refuses the transaction of the claims' rows."""
    here, there = two_processes()
    here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)              # this process knows the worker now
    there.workers.quarantine(task_queue_id, "wg", "w1", to_iso(utcnow() + timedelta(hours=1)), "", utcnow())
    task_id = new_slugid()
    here.task_calls.create(task_id, make_task(task_queue_id))

    assert here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1) == {"tasks": []}
    assert here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1) == {"tasks": []}
    assert [run["state"] for run in here.task_calls.status(task_id)["runs"]] == ["pending"]
    assert there.work_claimer.claim_work(task_queue_id, "wg", "w2", 1)["tasks"][0]["status"]["taskId"] == task_id


def test_runs_a_claimwork_noted_and_did_not_get_are_taken_off_the_workers_row(task_queue_id, monkeypatch):
    services = memory_services()
    won, lost = new_slugid(), new_slugid()
    for task_id in (won, lost):
        services.task_calls.create(task_id, make_task(task_queue_id))
    claim_hint = services.work_claimer._claim_hint

    def loses_one(hint, *args):
        if hint.task_id == lost:   # another worker's claim got there first
            now = utcnow()
            services.updater.apply(lost, lambda status: lifecycle.claim(status, 0, "wg", "other", now,
                                                                         now + timedelta(minutes=5)), "claim")
        return claim_hint(hint, *args)
    monkeypatch.setattr(services.work_claimer, "_claim_hint", loses_one)
    claimed = services.work_claimer.claim_work(task_queue_id, "wg", "w1", 2)["tasks"]
    assert [claim["status"]["taskId"] for claim in claimed] == [won]
    assert services.workers.get(task_queue_id, "wg", "w1", utcnow())["recentTasks"] == [{"taskId": won, "runId": 0}]


def test_a_quarantine_lifted_by_another_process_is_seen(task_queue_id):
    here, there = two_processes()
    here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    here.workers.quarantine(task_queue_id, "wg", "w1", to_iso(utcnow() + timedelta(hours=1)), "", utcnow())
    there.workers.quarantine(task_queue_id, "wg", "w1", to_iso(utcnow()), "lifted", utcnow())
    task_id = new_slugid()
    here.task_calls.create(task_id, make_task(task_queue_id))

    claimed = here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)["tasks"]
    assert [claim["status"]["taskId"] for claim in claimed] == [task_id]


def test_a_workers_claims_are_recorded_after_its_row_expired_and_went(task_queue_id):
    """The version remembered is of a row the worker expiry deleted since: the claims are
    recorded on a new row."""
    here, there = two_processes()
    here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    there.workers.worker_table.delete(there.workers.worker_table.load(task_queue_id, "wg", "w1"))
    task_id = new_slugid()
    here.task_calls.create(task_id, make_task(task_queue_id))

    assert [claim["status"]["taskId"] for claim in here.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)["tasks"]] \
        == [task_id]
    assert here.workers.get(task_queue_id, "wg", "w1", utcnow())["recentTasks"] == [{"taskId": task_id, "runId": 0}]


def test_a_quarantine_leaves_the_worker_its_runs_and_a_shut_out_releases_them(task_queue_id):
    services = memory_services()
    kept, released = new_slugid(), new_slugid()
    until = to_iso(utcnow() + timedelta(hours=1))
    for task_id, worker_id in ((kept, "quarantined"), (released, "removed")):
        services.task_calls.create(task_id, make_task(task_queue_id))
        assert services.work_claimer.claim_work(task_queue_id, "wg", worker_id, 1)["tasks"]
    services.workers.quarantine(task_queue_id, "wg", "quarantined", until, "look at it", utcnow())
    services.workers.shut_out(task_queue_id, "wg", "removed", until, "removed", utcnow())

    assert [run["state"] for run in services.task_calls.status(kept)["runs"]] == ["running"]
    runs = services.task_calls.status(released)["runs"]
    assert [(run["state"], run.get("reasonResolved")) for run in runs] == [("exception", "worker-shutdown"),
                                                                           ("pending", None)]
    assert services.resolutions.completed(kept, 0)["status"]["state"] == "completed"
