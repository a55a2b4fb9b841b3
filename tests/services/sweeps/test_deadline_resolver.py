"""The deadline resolver: tasks past their deadline, driven by the sweep with short deadlines."""

import time
from datetime import timedelta

import pytest

from shared.domain.errors import Conflict
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import make_task
from tests.services.dependencies.test_dependency_tracker import deliver_events


def claim(services, task_queue_id):
    return services.work_claimer.claim_work(task_queue_id, "wg", "w", 1)["tasks"][0]


def test_deadlines_resolve_unscheduled_pending_and_running_tasks(services, task_queue_id):
    soon = to_iso(utcnow() + timedelta(seconds=2))
    running, pending, blocker = new_slugid(), new_slugid(), new_slugid()
    services.task_calls.create(running, make_task(task_queue_id, deadline=soon, priority="high"))
    services.task_calls.create(pending, make_task(task_queue_id, deadline=soon))
    services.task_calls.create(blocker, make_task(task_queue_id))
    unscheduled = new_slugid()
    services.task_calls.create(unscheduled, make_task(task_queue_id, deadline=soon, dependencies=[blocker]))
    dependent = new_slugid()
    services.task_calls.create(dependent, make_task(task_queue_id, dependencies=[pending], requires="all-resolved"))
    assert claim(services, task_queue_id)["status"]["taskId"] == running
    time.sleep(2.2)
    assert services.deadline_resolver.sweep() == 3
    for task_id in (running, pending, unscheduled):
        status = services.task_calls.status(task_id)
        assert status["state"] == "exception"
        assert status["runs"][-1]["reasonResolved"] == "deadline-exceeded"
    assert services.task_calls.status(unscheduled)["runs"][0]["reasonCreated"] == "exception"
    deliver_events(services)   # a claimed run counts until its resolution is processed
    counts = services.task_queues.counts(task_queue_id)
    assert (counts["pendingTasks"], counts["claimedTasks"]) == (2, 0)   # the blocker and the dependent
    deliver_events(services)
    assert services.task_calls.status(dependent)["state"] == "pending"   # its dependency resolved
    for call in (services.task_calls.cancel, services.task_calls.rerun, services.task_calls.schedule):
        with pytest.raises(Conflict):
            call(pending)
    with pytest.raises(Conflict):
        services.work_claimer.reclaim(running, 0)
    assert services.deadline_resolver.sweep() == 0


def test_a_deadline_reads_only_the_tasks_that_may_not_have_resolved_and_a_rerun_one_still_meets_it(
        services, task_queue_id, monkeypatch):
    soon, group_id = to_iso(utcnow() + timedelta(seconds=2)), new_slugid()
    done, rerun, waiting, blocker = new_slugid(), new_slugid(), new_slugid(), new_slugid()
    for task_id in (done, rerun):
        services.task_calls.create(task_id, make_task(task_queue_id, deadline=soon, taskGroupId=group_id))
    services.task_calls.create(blocker, make_task(task_queue_id, taskGroupId=group_id))
    services.task_calls.create(waiting, make_task(task_queue_id, deadline=soon, taskGroupId=group_id,
                                             dependencies=[blocker]))
    for _ in range(2):
        services.resolutions.completed(claim(services, task_queue_id)["status"]["taskId"], 0)
    deliver_events(services)
    services.task_calls.rerun(rerun)                    # pending again, with the deadline it had
    read = []
    apply_if_found = services.deadline_resolver.updater.apply_if_found
    monkeypatch.setattr(services.deadline_resolver.updater, "apply_if_found",
                        lambda task_id, *args, **kwargs: read.append(task_id) or apply_if_found(task_id, *args, **kwargs))
    time.sleep(2.2)
    assert services.deadline_resolver.sweep() == 2         # the rerun one and the one still waiting
    assert sorted(read) == sorted([rerun, waiting])
    assert services.task_calls.status(done)["state"] == "completed"
    for task_id in (rerun, waiting):
        assert services.task_calls.status(task_id)["runs"][-1]["reasonResolved"] == "deadline-exceeded"
    expired = services.task_expiry.sweep(now=utcnow() + timedelta(days=400))
    assert expired == 3                            # each indexed at its expiry, the blocker not yet (no deadline)
    for task_id in (done, rerun, waiting):
        with pytest.raises(Exception, match="not found"):
            services.task_calls.status(task_id)
