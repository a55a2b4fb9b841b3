"""Quarantine against a claimWork already under way: the claim is released, not kept."""

import threading
import time
from datetime import timedelta

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import make_task, memory_services


def test_a_claim_that_raced_the_quarantine_is_released(task_queue_id):
    services = memory_services(claim_work_wait=10)
    services.workers.arrive(task_queue_id, "wg", "racer", utcnow())      # a worker known from earlier claims
    answers = []
    polling = threading.Thread(target=lambda: answers.append(
        services.claims.claim_work(task_queue_id, "wg", "racer", 1)))
    polling.start()
    time.sleep(0.5)                                                      # it read the worker: not quarantined
    services.workers.quarantine(task_queue_id, "wg", "racer", to_iso(utcnow() + timedelta(hours=1)), "", utcnow())
    task_id = new_slugid()
    services.tasks.create(task_id, make_task(task_queue_id))             # the long poll wakes and claims it
    polling.join(timeout=20)

    assert answers == [{"tasks": []}]
    runs = services.tasks.status(task_id)["runs"]
    assert [(run["state"], run.get("reasonResolved"), run.get("workerId")) for run in runs] == [
        ("exception", "worker-shutdown", "racer"), ("pending", None, None)]
    assert services.workers.get(task_queue_id, "wg", "racer", utcnow())["recentTasks"] == []
