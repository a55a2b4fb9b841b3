"""The Container Apps provider through the real SDK (azure-mgmt-appcontainers, signed in by
azure-identity's ManagedIdentityCredential) against the local stand-in for ARM, with each of
its faults: errors classified, and never two executions for one worker."""

from __future__ import annotations

import logging

import pytest

from shared.domain.timestamps import utcnow
from shared.domain.worker_pools import WorkerPool
from shared.providers.base import (
    ENV_REGISTRATION_TOKEN, ENV_WORKER_ID, ErrorClass, ProviderUnavailable, QuotaExceeded, StartRefused, WorkerHealth,
)
from tests.conftest import eventually
from tests.providers.conftest import POOL_BODY, environment_of, make_launch, ref_of

@pytest.fixture
def pool():
    return WorkerPool.create("proj/aca", {**POOL_BODY, "providerId": "aca",
                                          "config": {"maxCapacity": 4, "container": {"cpu": 0.5, "memory": "1Gi"}}},
                             utcnow())


def starts(arm) -> int:
    return sum(1 for method, path, _ in arm.requests if method == "POST" and path.endswith("/start"))


def health(provider, ref):
    return provider.check_workers([ref])[ref]


def test_a_worker_is_one_execution_running_with_its_registration(arm, provider, pool, caplog):
    caplog.set_level(logging.DEBUG)
    launch = make_launch(pool, "westeurope", "aca")
    started = provider.start_worker(pool, launch)
    [execution] = arm.executions_of(launch.worker_id)
    assert started.provider_data == {"resourceGroup": "workers-rg", "jobName": "workers",
                                     "executionName": execution.name}
    container = execution.template["containers"][0]
    assert (container["name"], container["image"]) == ("worker", "registry.example/taskq-worker:1")
    assert container["resources"] == {"cpu": 0.5, "memory": "1Gi"}
    environment = environment_of(execution.process.pid)
    assert environment[ENV_WORKER_ID] == launch.worker_id
    assert environment[ENV_REGISTRATION_TOKEN] == launch.registration.token
    assert health(provider, ref_of(pool, launch, started.provider_data)) is WorkerHealth.ALIVE
    # Signed in through the identity endpoint; the start was a long-running operation, polled.
    assert arm.tokens_issued and any("/operationResults/" in path for _, path, _ in arm.requests)
    assert launch.registration.token not in caplog.text


def test_429_is_waited_out_as_retry_after_says(arm, provider, pool, waits):
    arm.faults.throttled_starts, arm.faults.retry_after = 2, 1
    launch = make_launch(pool, "westeurope", "aca")
    provider.start_worker(pool, launch)
    assert waits == [1.0, 1.0] and len(arm.executions_of(launch.worker_id)) == 1 and starts(arm) == 3


def test_a_long_retry_after_goes_to_the_provisioner_as_transient(arm, provider, pool, waits):
    arm.faults.throttled_starts, arm.faults.retry_after = 1, 120
    with pytest.raises(ProviderUnavailable) as error:
        provider.start_worker(pool, make_launch(pool, "westeurope", "aca"))
    assert error.value.error_class is ErrorClass.TRANSIENT and error.value.retry_after == 120
    assert waits == [] and arm.executions == {}


def test_500_before_the_start_is_retried_once_the_worker_is_known_not_started(arm, provider, pool):
    arm.faults.failed_starts = 1
    launch = make_launch(pool, "westeurope", "aca")
    provider.start_worker(pool, launch)
    assert len(arm.executions_of(launch.worker_id)) == 1 and starts(arm) == 2


def test_500_after_the_start_was_carried_out_does_not_start_it_twice(arm, provider, pool):
    arm.faults.failed_starts, arm.faults.carried_out = 1, True
    launch = make_launch(pool, "westeurope", "aca")
    started = provider.start_worker(pool, launch)
    [execution] = arm.executions_of(launch.worker_id)
    assert started.provider_data["executionName"] == execution.name and starts(arm) == 1


def test_a_failed_poll_is_resolved_by_looking_not_by_starting_again(arm, provider, pool):
    arm.faults.failed_polls = 1
    launch = make_launch(pool, "westeurope", "aca")
    started = provider.start_worker(pool, launch)
    [execution] = arm.executions_of(launch.worker_id)
    assert started.provider_data["executionName"] == execution.name and starts(arm) == 1


def test_arm_failing_every_time_is_transient_and_starts_nothing(arm, provider, pool, waits):
    arm.faults.failed_starts = 100
    outcome = provider.start_workers(pool, [make_launch(pool, "westeurope", "aca") for _ in range(3)])
    assert outcome.started == () and isinstance(outcome.error, ProviderUnavailable)
    assert arm.executions == {} and starts(arm) == provider.attempts and len(waits) == provider.attempts - 1


@pytest.mark.parametrize("status, code, kind", [(409, "ContainerAppJobExecutionQuotaExceeded", QuotaExceeded),
                                                 (403, "SubscriptionLimitReached", QuotaExceeded),
                                                 (400, "InvalidParameterValue", StartRefused),
                                                 (403, "AuthorizationFailed", StartRefused)])
def test_refusals_are_classified_and_not_retried(arm, provider, pool, status, code, kind):
    arm.faults.refusal = (status, code)
    with pytest.raises(kind) as error:
        provider.start_worker(pool, make_launch(pool, "westeurope", "aca"))
    assert f"ARM answered {status} {code}" in error.value.message and starts(arm) == 1


def test_a_revoked_token_is_a_refused_start(arm, provider, pool):
    provider.start_worker(pool, make_launch(pool, "westeurope", "aca"))
    arm.tokens_issued.clear()   # ARM no longer accepts the identity's cached token
    with pytest.raises(StartRefused, match="ARM answered 401"):
        provider.start_worker(pool, make_launch(pool, "westeurope", "aca"))


def test_an_execution_that_never_starts_stays_starting_until_stopped(arm, provider, pool):
    arm.faults.never_start = True
    launch = make_launch(pool, "westeurope", "aca")
    ref = ref_of(pool, launch, provider.start_worker(pool, launch).provider_data)
    assert health(provider, ref) is WorkerHealth.STARTING   # its registrationTimeout decides
    provider.stop_worker(ref)
    assert health(provider, ref) is WorkerHealth.GONE
    assert arm.status(arm.executions_of(launch.worker_id)[0]) == "Stopped"


def test_an_execution_that_dies_midway_is_reported_gone(arm, provider, pool):
    launch = make_launch(pool, "westeurope", "aca")
    ref = ref_of(pool, launch, provider.start_worker(pool, launch).provider_data)
    assert health(provider, ref) is WorkerHealth.ALIVE
    arm.kill(ref.provider_data["executionName"])
    eventually(lambda: health(provider, ref) is WorkerHealth.GONE, message="the dead execution reported gone")
    assert arm.status(arm.executions[ref.provider_data["executionName"]]) == "Failed"


def test_stopping_takes_the_process_down_even_when_the_record_lost_the_execution(arm, provider, pool):
    launch = make_launch(pool, "westeurope", "aca")
    started = provider.start_worker(pool, launch)
    provider.stop_worker(ref_of(pool, launch))   # no executionName: found by the worker id
    [execution] = arm.executions_of(launch.worker_id)
    eventually(lambda: not arm.processes.alive(execution.process), message="the execution's process stopped")
    assert health(provider, ref_of(pool, launch, started.provider_data)) is WorkerHealth.GONE
    provider.stop_worker(ref_of(pool, launch, started.provider_data))   # again: harmless


def test_a_second_execution_of_one_worker_is_stopped_on_sight(arm, provider, pool):
    """ARM listed the first start too late and the worker was started twice: the check
    keeps the recorded execution and stops the other."""
    launch = make_launch(pool, "westeurope", "aca")
    ref = ref_of(pool, launch, provider.start_worker(pool, launch).provider_data)
    provider.client.jobs.begin_start("workers-rg", "workers", provider.template(pool, launch)).result()
    recorded = ref.provider_data["executionName"]
    first, second = sorted(arm.executions_of(launch.worker_id), key=lambda execution: execution.name != recorded)
    assert health(provider, ref) is WorkerHealth.ALIVE
    assert arm.status(second) == "Stopped" and arm.status(first) == "Running"
