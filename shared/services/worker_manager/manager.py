"""The worker manager's services, as the bindings reach them (`Services.worker_manager`)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.services.worker_manager.pool_errors import PoolErrors
from shared.providers.registry import Providers
from shared.services.worker_manager.provisioner import Provisioner
from shared.services.worker_manager.wake_ups import WakeUps
from shared.services.worker_manager.worker_credentials import WorkerCredentials
from shared.services.worker_manager.worker_pools import WorkerPools
from shared.services.worker_manager.workers import PoolWorkers


@dataclass(frozen=True)
class WorkerManager:
    pools: WorkerPools
    workers: PoolWorkers
    credentials: WorkerCredentials
    errors: PoolErrors
    provisioner: Provisioner
    wake_ups: WakeUps
    providers: Providers
