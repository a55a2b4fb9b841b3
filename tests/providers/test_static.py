"""The static provider: nothing started, workers register with their own static secret as
often as they restart, only while running; the secret is kept as a digest."""

import pytest

from shared.domain.timestamps import utcnow
from shared.domain.worker_pools import WorkerPool
from shared.domain.workers import WorkerState
from shared.providers.base import ErrorClass, WorkerHealth, WorkerRef
from shared.providers.static import StaticProvider
from shared.domain.registration import RegistrationRefused, new_secret
from tests.providers.conftest import POOL_BODY, make_launch

POOL = WorkerPool.create("proj/static", {**POOL_BODY, "providerId": "static", "config": {}}, utcnow())
SECRET = new_secret()
DATA = StaticProvider.provider_data(SECRET)


def test_nothing_is_started_and_the_refusal_says_why():
    provider = StaticProvider()
    assert not provider.starts_workers and provider.config_schema == "worker-manager/config-static"
    outcome = provider.start_workers(POOL, [make_launch(POOL)])
    assert outcome.started == () and outcome.error.error_class is ErrorClass.REFUSED
    assert "started by people" in outcome.error.message


def test_the_secret_is_kept_as_a_digest_and_recognised():
    assert SECRET not in str(DATA)
    assert StaticProvider.same_secret(DATA, SECRET) and not StaticProvider.same_secret(DATA, new_secret())


def test_a_running_worker_registers_with_its_secret_again_and_again():
    for _ in range(3):
        StaticProvider.verify_registration(WorkerState.RUNNING, DATA, {"staticSecret": SECRET}, "proj/static/g/w")


@pytest.mark.parametrize("state, proof, message", [
    (WorkerState.STOPPED, {"staticSecret": SECRET}, "Worker proj/static/g/w is not running"),
    (WorkerState.RUNNING, {"token": SECRET}, "missing staticSecret in workerIdentityProof"),
    (WorkerState.RUNNING, {"staticSecret": new_secret()}, "bad staticSecret in workerIdentityProof"),
])
def test_registration_is_refused_with_taskclusters_reasons(state, proof, message):
    with pytest.raises(RegistrationRefused, match=f"^{message}$") as refused:
        StaticProvider.verify_registration(state, DATA, proof, "proj/static/g/w")
    assert refused.value.code == "InputError"


def test_static_workers_are_alive_until_removed_and_stopping_touches_nothing():
    provider = StaticProvider()
    workers = [WorkerRef("proj/static", "g", f"w{i}", DATA) for i in range(3)]
    provider.stop_worker(workers[0])
    assert provider.check_workers(workers) == {worker: WorkerHealth.ALIVE for worker in workers}
