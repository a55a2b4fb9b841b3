"""The `static` provider: workers that people start themselves, as Taskcluster's static
provider has them.

Nothing is started. Someone holding `worker-manager:create-worker:<pool>/<group>/<id>` calls
createWorker with a `staticSecret` for that worker (Taskcluster: "each worker should have a
distinct secret"); the worker is `running` from then on and registers with that secret, as
often as it restarts. Its record keeps the secret's digest, not the secret. removeWorker
marks it stopped; nothing here can reach the machine, and nothing checks on it: a static
worker is alive until it is removed or expires, and the queue's claim expiry covers one that
vanishes.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from shared.domain.worker_pools import WorkerPool
from shared.domain.workers import WorkerState

from shared.domain.registration import RegistrationRefused, digest, secret_matches
from shared.providers.base import Provider, StartedWorker, StartRefused, WorkerHealth, WorkerLaunch, WorkerRef

SECRET_DIGEST = "staticSecretDigest"


class StaticProvider(Provider):
    provider_type = "static"
    starts_workers = False

    def start_worker(self, pool: WorkerPool, launch: WorkerLaunch) -> StartedWorker:
        raise StartRefused(f"pool {pool.worker_pool_id} is static: its workers are started by people, "
                           "who create each one with createWorker")

    def stop_worker(self, worker: WorkerRef) -> None:
        """Nothing to reach: the caller marks the worker stopped, and the worker's next
        reregistration or claim is refused."""

    def check_workers(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, WorkerHealth]:
        return {worker: WorkerHealth.ALIVE for worker in workers}

    @staticmethod
    def provider_data(static_secret: str) -> dict[str, Any]:
        """What createWorker and updateWorker keep of a worker's secret."""
        return {SECRET_DIGEST: digest(static_secret)}

    @staticmethod
    def same_secret(provider_data: Mapping[str, Any], static_secret: str) -> bool:
        """createWorker again for an existing worker is fine with the same secret (Taskcluster
        returns the worker); with another, the worker already exists."""
        return secret_matches(static_secret, provider_data.get(SECRET_DIGEST, ""))

    @staticmethod
    def verify_registration(state: WorkerState, provider_data: Mapping[str, Any], proof: Mapping[str, Any],
                            name: str) -> None:
        """registerWorker's check of `workerIdentityProof` for a static worker; raises
        RegistrationRefused with Taskcluster's reasons."""
        if state is not WorkerState.RUNNING:
            raise RegistrationRefused(f"Worker {name} is not running")
        if "staticSecret" not in proof:
            raise RegistrationRefused("missing staticSecret in workerIdentityProof")
        if not secret_matches(proof["staticSecret"], provider_data.get(SECRET_DIGEST, "")):
            raise RegistrationRefused("bad staticSecret in workerIdentityProof")
