"""The worker manager's events, as Taskcluster's worker-manager publishes them
(worker-manager-exchanges.json): on `exchange/taskcluster-worker-manager/v1/<name>`, with the
routing key `primary.<providerId>.<provisionerId>.<workerType>.<workerGroup>.<workerId>.<launchConfigId>._`
(`_` for a word that does not apply) and the bodies of its pulse-*-message schemas.

Each event's id is stable for the change it announces (the same change, written again after
a lost answer, has the same id), so a consumer drops a copy.
"""

from __future__ import annotations

from shared.domain.task_events import Event
from shared.domain.worker_pools import split_worker_pool_id

POOL_CREATED, POOL_UPDATED, POOL_ERROR = "worker-pool-created", "worker-pool-updated", "worker-pool-error"
WORKER_REQUESTED, WORKER_RUNNING = "worker-requested", "worker-running"
WORKER_STOPPED, WORKER_REMOVED = "worker-stopped", "worker-removed"


def _routing_key(provider_id: str, worker_pool_id: str, worker_group: str | None = None,
                 worker_id: str | None = None) -> str:
    provisioner_id, worker_type = split_worker_pool_id(worker_pool_id)
    return ".".join(["primary", provider_id, provisioner_id, worker_type, worker_group or "_", worker_id or "_",
                     "_", "_"])


def pool_changed(exchange: str, worker_pool_id: str, provider_id: str, previous_provider_id: str | None,
                 at: str) -> Event:
    """workerPoolCreated or workerPoolUpdated (with the provider it had before, if another)."""
    body = {"workerPoolId": worker_pool_id, "providerId": provider_id}
    if previous_provider_id and previous_provider_id != provider_id:
        body["previousProviderId"] = previous_provider_id
    return Event(exchange, _routing_key(provider_id, worker_pool_id), body, f"{worker_pool_id}/{exchange}/{at}", at)


def pool_error(worker_pool_id: str, provider_id: str, error_id: str, kind: str, title: str, at: str,
               worker_group: str | None = None, worker_id: str | None = None) -> Event:
    body = {"workerPoolId": worker_pool_id, "providerId": provider_id, "errorId": error_id, "kind": kind,
            "title": title, "timestamp": at}
    if worker_group and worker_id:
        body.update(workerGroup=worker_group, workerId=worker_id)
    return Event(POOL_ERROR, _routing_key(provider_id, worker_pool_id, worker_group, worker_id), body,
                 f"{worker_pool_id}/{POOL_ERROR}/{error_id}", at)


def worker_changed(exchange: str, worker_pool_id: str, provider_id: str, worker_group: str, worker_id: str,
                   capacity: int, at: str, reason: str | None = None) -> Event:
    """workerRequested, workerRunning, workerStopped, or workerRemoved (with its `reason`)."""
    body = {"workerPoolId": worker_pool_id, "providerId": provider_id, "workerGroup": worker_group,
            "workerId": worker_id, "capacity": capacity, "timestamp": at}
    if exchange == WORKER_REMOVED:
        body["reason"] = reason or "removed"
    return Event(exchange, _routing_key(provider_id, worker_pool_id, worker_group, worker_id), body,
                 f"{worker_pool_id}/{worker_group}/{worker_id}/{exchange}", at)
