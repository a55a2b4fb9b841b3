"""The provisioner on Azurite, starting Azure Container Apps executions through the real SDK
against the local stand-in for ARM, with its faults: never above maxCapacity, never two
workers for one pending task, provider errors recorded per pool with back-off, starts that
time out and workers that die midway stopped (their runs released), and one pool's failure
never stopping the others."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, utcnow
from shared.domain.workers import WorkerState
from shared.providers.local import LocalProvider
from shared.providers.registry import Providers
from tests.conftest import build_services, eventually, make_task
from tests.providers.conftest import POOL_BODY, SLEEPER, environment_of

POOL = "proj/aca"


@pytest.fixture
def local(tmp_path):
    provider = LocalProvider(command=SLEEPER, log_dir=tmp_path / "local", grace=1)
    yield provider
    provider.close()


@pytest.fixture
def services(azurite, provider, local):
    return build_services(azurite, providers=Providers({"aca": provider, "local": local}))


@pytest.fixture
def wm(services):
    return services.worker_manager


def aca_pool(wm, pool_id: str = POOL, **config) -> None:
    wm.pools.create(pool_id, {**POOL_BODY, "providerId": "aca", "config": {"maxCapacity": 3, **config}}, utcnow(),
                    by="tests")


def pending(services, pool_id: str, count: int) -> list[str]:
    task_ids = [new_slugid() for _ in range(count)]
    for task_id in task_ids:
        services.task_calls.create(task_id, make_task(pool_id))
    return task_ids


def workers(wm, pool_id: str = POOL, state: WorkerState | None = None) -> list:
    return [w for w in wm.workers.states.table.all(pool_id) if state is None or w.state is state]


def errors(wm, pool_id: str = POOL) -> list[dict]:
    return wm.errors.list(pool_id, "", 100)[0]["workerPoolErrors"]


def test_one_execution_per_pending_task_up_to_max_capacity_and_no_more_on_the_next_pass(arm, services, wm):
    aca_pool(wm)
    pending(services, POOL, 5)
    outcome = wm.provisioner.provision(POOL)
    assert (outcome.started, outcome.full) == (3, True) and len(arm.executions) == 3
    assert {w.state for w in workers(wm)} == {WorkerState.REQUESTED}
    assert all(w.provider_data["executionName"] in arm.executions for w in workers(wm))
    assert wm.provisioner.provision(POOL).started == 0 and len(arm.executions) == 3
    requested = [e for e in services.bus.published if e.exchange == "worker-requested"]
    assert len({e.id for e in requested}) == 3 and requested[0].routing_key.startswith("primary.aca.proj.aca.westeurope.")


def test_requested_workers_count_for_the_tasks_they_were_started_for(arm, services, wm):
    aca_pool(wm, maxCapacity=10)
    pending(services, POOL, 2)
    assert wm.provisioner.provision(POOL).started == 2
    pending(services, POOL, 1)
    assert wm.provisioner.provision(POOL).started == 1 and len(arm.executions) == 3


def test_a_throttled_start_is_waited_out_and_starts_each_worker_once(arm, services, wm, waits):
    aca_pool(wm)
    arm.faults.throttled_starts, arm.faults.retry_after = 1, 1
    arm.faults.failed_starts, arm.faults.carried_out = 1, True   # and a 500 after one start was made
    pending(services, POOL, 3)
    assert wm.provisioner.provision(POOL).started == 3
    assert len(arm.executions) == 3 and waits and errors(wm) == []
    assert len({e.worker_id for e in arm.executions.values()}) == 3


@pytest.mark.parametrize("fault, kind", [
    ({"refusal": (409, "ContainerAppOperationQuotaExceeded")}, "quota-exceeded"),
    ({"refusal": (400, "InvalidTemplate")}, "start-refused"),
    ({"throttled_starts": 5, "retry_after": 60}, "provider-unavailable"),
    ({"failed_starts": 10}, "provider-unavailable"),
])
def test_a_providers_error_is_recorded_for_the_pool_which_backs_off(arm, services, wm, fault, kind):
    aca_pool(wm)
    for name, value in fault.items():
        setattr(arm.faults, name, value)
    pending(services, POOL, 2)
    before = utcnow()
    assert wm.provisioner.provision(POOL).started == 0
    [error] = errors(wm)
    assert error["kind"] == kind and error["extra"]["workersNotStarted"] == 2
    assert {w.state for w in workers(wm)} == {WorkerState.STOPPED}   # none left counting as on its way
    backoff = parse_iso(wm.workers.states.table.provisioning(POOL).backoff_until)
    assert backoff >= before + timedelta(seconds=5)
    arm.faults = type(arm.faults)()   # the cloud is fine again, but the pool waits
    assert wm.provisioner.provision(POOL).started == 0 and len(errors(wm)) == 1
    published = [e for e in services.bus.published if e.exchange == "worker-pool-error"]
    assert published[0].body["kind"] == kind and published[0].body["errorId"] == error["errorId"]


def test_a_start_that_never_comes_is_given_up_after_registration_timeout(arm, services, wm):
    aca_pool(wm, lifecycle={"registrationTimeout": 1})
    arm.faults.never_start = True
    pending(services, POOL, 1)
    assert wm.provisioner.provision(POOL).started == 1
    [first] = arm.executions.values()
    time.sleep(1.2)
    # Given up and stopped, its capacity held until it is gone; another is started meanwhile.
    assert wm.provisioner.provision(POOL).started == 1
    assert [w.worker_id for w in workers(wm, state=WorkerState.STOPPING)] == [first.worker_id]
    assert [e["kind"] for e in errors(wm)] == ["start-timed-out"] and first.stopped
    wm.provisioner.provision(POOL)   # the stand-in shows it Stopped: the worker is stopped for good
    assert [w.worker_id for w in workers(wm, state=WorkerState.STOPPED)] == [first.worker_id]
    assert len(arm.executions) == 2


def test_a_worker_that_dies_midway_is_stopped_and_its_run_retried_at_once(arm, services, wm):
    aca_pool(wm, maxCapacity=1)
    [task_id] = pending(services, POOL, 1)
    wm.provisioner.provision(POOL)
    [execution] = arm.executions.values()
    env = {item["name"]: item["value"] for item in execution.template["containers"][0]["env"]}
    worker_id = env["TASKQ_WORKER_ID"]
    wm.credentials.register({"workerPoolId": POOL, "providerId": "aca", "workerGroup": "westeurope",
                             "workerId": worker_id, "workerIdentityProof": {"token": env["TASKQ_REGISTRATION_TOKEN"]}},
                            utcnow())
    [claim] = services.work_claimer.claim_work(POOL, "westeurope", worker_id, 1)["tasks"]
    assert claim["status"]["taskId"] == task_id
    arm.kill(execution.name)
    eventually(lambda: arm.status(execution) == "Failed", message="the execution failed")
    wm.provisioner.provision(POOL)
    runs = services.task_calls.status(task_id)["runs"]
    assert (runs[0]["state"], runs[0]["reasonResolved"], runs[1]["state"]) == ("exception", "worker-shutdown", "pending")
    assert wm.workers.get(POOL, "westeurope", worker_id)["state"] == "stopped"
    assert [e["kind"] for e in errors(wm)] == ["worker-gone"]
    assert len(arm.executions) == 2   # a new worker for the retried run


def test_one_pools_failure_never_stops_the_others(arm, services, wm, local):
    aca_pool(wm, "broken/aca")
    arm.faults.refusal = (400, "InvalidTemplate")
    wm.pools.create("fine/local", {**POOL_BODY, "providerId": "local", "config": {"maxCapacity": 2}}, utcnow(),
                    by="tests")
    pending(services, "broken/aca", 1)
    pending(services, "fine/local", 2)
    outcomes = {outcome.worker_pool_id: outcome for outcome in wm.provisioner.provision_all()}
    assert outcomes["broken/aca"].started == 0 and outcomes["fine/local"].started == 2
    assert len(workers(wm, "fine/local", WorkerState.REQUESTED)) == 2 and errors(wm, "fine/local") == []


def test_a_second_pass_begun_meanwhile_records_no_workers(arm, services, wm):
    """Two passes of one pool at once: the one that took the provisioning row last decides."""
    aca_pool(wm)
    pending(services, POOL, 3)
    provisioner = wm.provisioner
    state, _ = provisioner._begin(POOL, None)
    wm.provisioner.provision(POOL)   # begins after `state` was taken, and starts 3
    pool = wm.pools.load(POOL).pool
    started, _ = provisioner._start(pool, state, 3, 1, utcnow())
    assert started == 0 and len(arm.executions) == 3


def test_a_wake_up_covered_by_a_pass_begun_since_does_nothing(arm, services, wm):
    aca_pool(wm)
    requested = utcnow()
    pending(services, POOL, 1)
    assert wm.provisioner.provision(POOL).started == 1
    assert wm.provisioner.handle_message({"workerPoolId": POOL, "requested": requested.isoformat()}).ran is False


def registered_local_workers(services, wm, pool_id: str, count: int) -> list[str]:
    """`count` workers of a local pool, started for pending tasks and registered with their
    tokens, as `taskq_worker` registers (the stand-in process does not)."""
    pending(services, pool_id, count)
    assert wm.provisioner.provision(pool_id).started == count
    ids = []
    for worker in workers(wm, pool_id):
        env = environment_of(worker.provider_data["pid"])
        wm.credentials.register({"workerPoolId": pool_id, "providerId": "local", "workerGroup": "local",
                                 "workerId": worker.worker_id,
                                 "workerIdentityProof": {"token": env["TASKQ_REGISTRATION_TOKEN"]}}, utcnow())
        ids.append(worker.worker_id)
    return ids


def test_workers_beyond_a_lowered_max_capacity_are_asked_to_terminate_newest_first(services, wm):
    wm.pools.create("proj/shrinks", {**POOL_BODY, "config": {"maxCapacity": 3}}, utcnow(), by="tests")
    registered_local_workers(services, wm, "proj/shrinks", 3)
    wm.pools.update("proj/shrinks", {**POOL_BODY, "config": {"maxCapacity": 1}}, utcnow(), by="tests")
    wm.provisioner.provision("proj/shrinks")
    answers = {w.worker_id: wm.workers.should_terminate("proj/shrinks", "local", w.worker_id)
               for w in workers(wm, "proj/shrinks")}
    asked = [worker_id for worker_id, answer in answers.items() if answer["terminate"]]
    assert len(asked) == 2 and all(answers[w]["reason"] == "worker pool is over its maxCapacity" for w in asked)


def test_a_deleted_pool_asks_its_workers_to_go_and_is_removed_once_they_have(services, wm, local):
    wm.pools.create("proj/goes", {**POOL_BODY, "config": {"maxCapacity": 2}}, utcnow(), by="tests")
    ids = registered_local_workers(services, wm, "proj/goes", 2)
    wm.pools.delete("proj/goes", utcnow(), by="tests")
    wm.provisioner.provision("proj/goes")
    assert all(wm.workers.should_terminate("proj/goes", "local", worker_id) ==
               {"terminate": True, "reason": "worker pool deleted"} for worker_id in ids)
    for worker_id in ids:   # as each worker does once its task is done
        wm.workers.remove("proj/goes", "local", worker_id, utcnow())
    eventually(lambda: not wm.provisioner.provision("proj/goes").ran or wm.pools.pool_table.load("proj/goes") is None,
               message="the pool removed")
    assert wm.pools.pool_table.load("proj/goes") is None and workers(wm, "proj/goes") == []
