"""The provider port: what the provisioner, the API and the watchdog ask of whatever starts
workers, and nothing more.

- `start_workers(pool, launches)`: start one worker per launch, each with its registration
  in its environment; returns those started and, if one failed, the classified error that
  stopped the batch (the launches after it were not tried).
- `stop_worker(worker)`: take a worker down; idempotent, a worker already gone is fine.
- `check_workers(workers)`: which of them are starting, alive, or gone (exited, failed,
  stopped, unknown to the provider), in one call per pass.

Errors are classified so the provisioner can back off one pool without stopping the others:
`QuotaExceeded` (the cloud says no more for now), `StartRefused` (this start will never work
as configured: fix the pool), `ProviderUnavailable` (try again later; `retry_after` when the
cloud said how long). Each carries the `kind` and `title` it is recorded under in
`listWorkerPoolErrors`.

The caller records each worker `requested`, with its registration token's digest, before
calling `start_workers`, and stores each `StartedWorker.provider_data` in the worker's record
after; `WorkerRef` gives it back. A provider finds its workers even when the process that
started them died before that second write (see each provider's `check_workers`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Mapping, Sequence

from shared.domain.worker_pools import WorkerPool

log = logging.getLogger(__name__)

# What a started worker finds in its environment (the worker image reads the same names).
ENV_ROOT_URL = "TASKCLUSTER_ROOT_URL"
ENV_WORKER_POOL_ID = "TASKQ_WORKER_POOL_ID"
ENV_PROVIDER_ID = "TASKQ_PROVIDER_ID"
ENV_WORKER_GROUP = "TASKQ_WORKER_GROUP"
ENV_WORKER_ID = "TASKQ_WORKER_ID"
ENV_REGISTRATION_TOKEN = "TASKQ_REGISTRATION_TOKEN"


class ErrorClass(str, Enum):
    QUOTA = "quota"
    REFUSED = "refused"
    TRANSIENT = "transient"


class ProviderError(Exception):
    error_class: ClassVar[ErrorClass]
    kind: ClassVar[str]       # worker-pool-error.json's `kind`
    title: ClassVar[str]

    def __init__(self, message: str, *, retry_after: float | None = None, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.details = dict(details or {})


class QuotaExceeded(ProviderError):
    error_class, kind, title = ErrorClass.QUOTA, "quota-exceeded", "Quota exceeded"


class StartRefused(ProviderError):
    error_class, kind, title = ErrorClass.REFUSED, "start-refused", "Start refused"


class ProviderUnavailable(ProviderError):
    error_class, kind, title = ErrorClass.TRANSIENT, "provider-unavailable", "Provider unavailable"


@dataclass(frozen=True)
class Registration:
    """Who a started worker is and how it proves it: handed over in its environment. The
    token never appears in a repr, hence in no log line."""

    root_url: str
    worker_pool_id: str
    provider_id: str
    worker_group: str
    worker_id: str
    token: str = field(repr=False)

    def environment(self) -> dict[str, str]:
        return {ENV_ROOT_URL: self.root_url, ENV_WORKER_POOL_ID: self.worker_pool_id,
                ENV_PROVIDER_ID: self.provider_id, ENV_WORKER_GROUP: self.worker_group,
                ENV_WORKER_ID: self.worker_id, ENV_REGISTRATION_TOKEN: self.token}


@dataclass(frozen=True)
class WorkerLaunch:
    """One worker to start."""

    registration: Registration
    capacity: int = 1

    @property
    def worker_id(self) -> str:
        return self.registration.worker_id


@dataclass(frozen=True)
class StartedWorker:
    worker_id: str
    provider_data: Mapping[str, Any]   # JSON: kept in the worker's record, handed back in WorkerRef


@dataclass(frozen=True)
class StartOutcome:
    started: tuple[StartedWorker, ...]
    error: ProviderError | None = None


@dataclass(frozen=True)
class WorkerRef:
    """One of a provider's workers, as its record knows it; equal and hashed by its key."""

    worker_pool_id: str
    worker_group: str
    worker_id: str
    provider_data: Mapping[str, Any] = field(default_factory=dict, compare=False)


class WorkerHealth(str, Enum):
    STARTING = "starting"   # accepted by the provider, not running yet (registrationTimeout decides)
    ALIVE = "alive"
    GONE = "gone"           # exited, failed, stopped, or unknown to the provider


class Provider(ABC):
    """A provider type; one instance serves every pool whose providerId names it."""

    provider_type: ClassVar[str]
    starts_workers: ClassVar[bool] = True   # False: workers come by themselves (static)

    @property
    def config_schema(self) -> str:
        """The schema (shared.validation) a pool's config must meet for this provider."""
        return f"worker-manager/config-{self.provider_type}"

    @abstractmethod
    def start_worker(self, pool: WorkerPool, launch: WorkerLaunch) -> StartedWorker:
        """Start one worker or raise a ProviderError."""

    @abstractmethod
    def stop_worker(self, worker: WorkerRef) -> None:
        """Stop a worker; a worker already gone is not an error. Raises ProviderError."""

    @abstractmethod
    def check_workers(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, WorkerHealth]:
        """The health of each worker given (all of them in the answer). Raises ProviderError
        when the provider cannot tell (then nothing is concluded about any of them)."""

    def start_workers(self, pool: WorkerPool, launches: Sequence[WorkerLaunch]) -> StartOutcome:
        started = []
        for launch in launches:
            try:
                started.append(self.start_worker(pool, launch))
            except ProviderError as error:
                log.warning("%s: starting worker %s of pool %s failed (%s): %s", self.provider_type,
                            launch.worker_id, pool.worker_pool_id, error.kind, error.message)
                return StartOutcome(tuple(started), error)
            log.info("%s: started worker %s of pool %s", self.provider_type, launch.worker_id, pool.worker_pool_id)
        return StartOutcome(tuple(started))

    def close(self) -> None:
        """Release what the provider holds (the local provider stops its processes)."""
