"""Worker pools: their ids, their definitions, and the configuration our providers read.

A worker pool's id is the id of the task queue its workers claim from,
`<provisionerId>/<workerType>`, as in Taskcluster (worker-manager's `workerPoolId` pattern is
the queue's `taskQueueId` pattern). A pool's `config` is kept as its owner wrote it (the API
returns it unchanged); `PoolConfig` is how the provisioner and the providers read it, with
Taskcluster's defaults filled in. The JSON schema of each provider's config
(`schemas/v1/worker-manager/config-<provider type>.json`) has already checked types and
ranges; this module adds the rules a schema cannot say (minCapacity <= maxCapacity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Mapping

from shared.domain.errors import InvalidInput
from shared.domain.timestamps import to_iso

WORKER_POOL_ID_PATTERN = r"^[a-zA-Z0-9-_]{1,38}/[a-z]([-a-z0-9]{0,36}[a-z0-9])?$"
_WORKER_POOL_ID = re.compile(r"[a-zA-Z0-9_-]{1,38}/[a-z]([-a-z0-9]{0,36}[a-z0-9])?")

# Taskcluster's providerId of a pool being deleted: it keeps its workers until they are gone.
NULL_PROVIDER = "null-provider"

# Taskcluster's lifecycle defaults (worker-lifecycle.json; Provider.interpretLifecycle).
DEFAULT_REREGISTRATION_TIMEOUT = 345_600        # 4 days: also the credentials' lifetime
DEFAULT_QUEUE_INACTIVITY_TIMEOUT = 7_200        # 2 hours without claimWork or reclaimTask
# Taskcluster has no default registrationTimeout: a worker that never registers counts as
# requested until reregistrationTimeout (4 days), and the pool starts nothing in its place.
# Ours gives up on a start after 15 minutes, which covers a slow Container Apps pull.
DEFAULT_REGISTRATION_TIMEOUT = 900
# generic-worker's name and our default: an idle worker exits after a minute.
DEFAULT_IDLE_TIMEOUT_SECS = 60


def is_worker_pool_id(value: object) -> bool:
    return isinstance(value, str) and _WORKER_POOL_ID.fullmatch(value) is not None


def split_worker_pool_id(worker_pool_id: str) -> tuple[str, str]:
    """`(provisionerId, workerType)`; InvalidInput naming `workerPoolId` for anything else."""
    if not is_worker_pool_id(worker_pool_id):
        raise InvalidInput(f"workerPoolId: {worker_pool_id!r} does not match {WORKER_POOL_ID_PATTERN!r}")
    provisioner_id, worker_type = worker_pool_id.split("/")
    return provisioner_id, worker_type


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Lifecycle:
    """Seconds a worker has to register, to reregister, and to claim work (Taskcluster's
    `lifecycle`); the static provider honours only `reregistrationTimeout`."""

    registration_timeout: int = DEFAULT_REGISTRATION_TIMEOUT
    reregistration_timeout: int = DEFAULT_REREGISTRATION_TIMEOUT
    queue_inactivity_timeout: int = DEFAULT_QUEUE_INACTIVITY_TIMEOUT

    @classmethod
    def from_json(cls, body: Mapping[str, Any] | None) -> Lifecycle:
        body = body or {}
        return cls(
            registration_timeout=body.get("registrationTimeout", DEFAULT_REGISTRATION_TIMEOUT),
            reregistration_timeout=body.get("reregistrationTimeout", DEFAULT_REREGISTRATION_TIMEOUT),
            queue_inactivity_timeout=body.get("queueInactivityTimeout", DEFAULT_QUEUE_INACTIVITY_TIMEOUT),
        )


@dataclass(frozen=True)
class PoolConfig:
    """A pool's `config` with defaults: what the estimator and the providers act on.

    `provider_settings` keeps the keys only one provider reads (e.g. the Container Apps
    provider's `container`), untouched."""

    max_capacity: int
    min_capacity: int = 0
    scaling_ratio: float = 1.0
    capacity_per_instance: int = 1
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    worker_config: Mapping[str, Any] = field(
        default_factory=lambda: _frozen({"idleTimeoutSecs": DEFAULT_IDLE_TIMEOUT_SECS}))
    provider_settings: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))

    _OWN_KEYS = ("minCapacity", "maxCapacity", "scalingRatio", "capacityPerInstance", "lifecycle", "workerConfig")

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> PoolConfig:
        """Raises InvalidInput naming the field when the values contradict each other. A
        static pool has no capacities: it reads as minCapacity 0, maxCapacity 0."""
        minimum, maximum = config.get("minCapacity", 0), config.get("maxCapacity", 0)
        if minimum > maximum:
            raise InvalidInput(f"config.minCapacity: {minimum} is more than config.maxCapacity ({maximum})")
        worker_config = {"idleTimeoutSecs": DEFAULT_IDLE_TIMEOUT_SECS, **config.get("workerConfig", {})}
        return cls(
            max_capacity=maximum,
            min_capacity=minimum,
            scaling_ratio=config.get("scalingRatio", 1.0),
            capacity_per_instance=config.get("capacityPerInstance", 1),
            lifecycle=Lifecycle.from_json(config.get("lifecycle")),
            worker_config=_frozen(worker_config),
            provider_settings=_frozen({key: value for key, value in config.items() if key not in cls._OWN_KEYS}),
        )

    @property
    def idle_timeout_secs(self) -> int:
        return self.worker_config["idleTimeoutSecs"]


@dataclass(frozen=True)
class WorkerPool:
    """A worker pool's definition: the fields its owner sets, and when. The counts of its
    workers by state, which the API adds to its answers, are the storage's business."""

    worker_pool_id: str
    provider_id: str
    description: str
    owner: str
    email_on_error: bool
    config: Mapping[str, Any]
    created: str
    last_modified: str
    previous_provider_ids: tuple[str, ...] = ()

    @classmethod
    def create(cls, worker_pool_id: str, body: Mapping[str, Any], now: datetime) -> WorkerPool:
        """From a createWorkerPool body that its schema has accepted."""
        split_worker_pool_id(worker_pool_id)
        PoolConfig.from_json(body["config"])
        return cls(worker_pool_id=worker_pool_id, provider_id=body["providerId"], description=body["description"],
                   owner=body["owner"], email_on_error=body["emailOnError"], config=_frozen(body["config"]),
                   created=to_iso(now), last_modified=to_iso(now))

    def updated(self, body: Mapping[str, Any], now: datetime) -> WorkerPool:
        """Apply an updateWorkerPool body. As in Taskcluster, a `workerPoolId` in the body must
        be this pool's, `created`/`lastModified` there are ignored, and a provider replaced
        stays among `previous_provider_ids` until its workers are gone."""
        if body.get("workerPoolId", self.worker_pool_id) != self.worker_pool_id:
            raise InvalidInput(f"workerPoolId: {body['workerPoolId']!r} is not {self.worker_pool_id!r}")
        PoolConfig.from_json(body["config"])
        previous = self.previous_provider_ids
        if body["providerId"] != self.provider_id and self.provider_id not in previous:
            previous = previous + (self.provider_id,)
        return replace(self, provider_id=body["providerId"], description=body["description"], owner=body["owner"],
                       email_on_error=body["emailOnError"], config=_frozen(body["config"]),
                       last_modified=to_iso(now), previous_provider_ids=previous)

    def deleted(self, now: datetime) -> WorkerPool:
        """deleteWorkerPool: Taskcluster hands the pool to the null provider, which starts
        nothing; the pool is removed once its last worker has stopped."""
        if self.provider_id == NULL_PROVIDER:
            return self
        return self.updated({"providerId": NULL_PROVIDER, "description": self.description, "owner": self.owner,
                             "emailOnError": self.email_on_error, "config": dict(self.config)}, now)

    @property
    def pool_config(self) -> PoolConfig:
        return PoolConfig.from_json(self.config)

    def same_definition(self, other: WorkerPool) -> bool:
        """Whether `other` defines the pool as this one does (Taskcluster's `WorkerPool.equals`):
        a createWorkerPool repeated with it changes nothing and is answered as the first was."""
        fields = ("workerPoolId", "providerId", "description", "owner", "emailOnError", "config")
        mine, theirs = self.to_json(), other.to_json()
        return all(mine[field] == theirs[field] for field in fields)

    def to_json(self) -> dict[str, Any]:
        """The owner's fields as worker-pool-full.json names them (without the counts)."""
        return {"workerPoolId": self.worker_pool_id, "providerId": self.provider_id,
                "description": self.description, "owner": self.owner, "emailOnError": self.email_on_error,
                "config": _thawed(self.config), "created": self.created, "lastModified": self.last_modified}


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thawed(item) for item in value]
    return value
