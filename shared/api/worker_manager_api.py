"""The worker manager API (`/api/worker-manager/v1/...`), declared as data: Taskcluster's
names, routes, bodies and scopes (worker-manager-api.json; the scopes are in `scopes.py`).

In Taskcluster's order, with its wildcards: the first endpoint whose route matches answers
(`router.py`). A pool id sent with `%2F`, as the clients send it, stays one parameter
everywhere; sent with its slash as it is, it is taken whole only where Taskcluster's route
declares it `{*workerPoolId}` and no route before it matches: `/worker-pool/proj/linux` is
the pool `proj/linux`, but `/workers/proj/linux` lists the worker group `linux` of a pool
`proj` (a 400: no such pool id), as in Taskcluster.
"""

from __future__ import annotations

from functools import partial

from shared.api.dispatch import Call
from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls
from shared.domain.timestamps import utcnow
from shared.services.worker_manager.worker_metadata import WorkerMetadata

SERVICE_ROOT = "/worker-manager/v1"
PAGED = ("continuationToken", "limit")
POOL = "/worker-pool/<workerPoolId>"
WORKER = "/workers/<workerPoolId>/<workerGroup>/<workerId>"
QUEUE_WORKERS = "/provisioners/<provisionerId>/worker-types/<workerType>/workers"


def _wm(call: Call):
    return call.services.worker_manager


def _pool_id(call: Call) -> str:
    return call.params["workerPoolId"]


def _worker(call: Call) -> tuple[str, str, str]:
    return call.params["workerPoolId"], call.params["workerGroup"], call.params["workerId"]


def _list_workers(call: Call) -> dict:
    return paged(call.query, lambda after, limit: _wm(call).workers.list(
        _pool_id(call), after, limit, call.query.get("state"), call.params.get("workerGroup")))


def _metadata(call: Call) -> WorkerMetadata:
    """The queue's workers with the manager's view of each (listWorkers, getWorker)."""
    return WorkerMetadata(call.services.workers, _wm(call).workers.states.table)


def _list_queue_workers(call: Call) -> dict:
    return paged(call.query, lambda after, limit: _metadata(call).list(
        call.params["provisionerId"], call.params["workerType"], after, limit, call.query.get("quarantined"),
        call.query.get("workerState"), utcnow()))


ENDPOINTS = [
    *service_calls("Taskcluster-compatible Worker Manager", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("listProviders", "GET", "/providers",
             lambda call: paged(call.query, _wm(call).pools.providers_page),
             query=PAGED, output_schema="worker-manager/provider-list"),
    Endpoint("createWorkerPool", "PUT", POOL,
             lambda call: _wm(call).pools.create(_pool_id(call), call.body, utcnow(), by=call.actor),
             input_schema="worker-manager/create-worker-pool-request",
             output_schema="worker-manager/worker-pool-full", wildcard="workerPoolId"),
    Endpoint("updateWorkerPool", "POST", POOL,
             lambda call: _wm(call).pools.update(_pool_id(call), call.body, utcnow(), by=call.actor),
             input_schema="worker-manager/update-worker-pool-request",
             output_schema="worker-manager/worker-pool-full", wildcard="workerPoolId"),
    Endpoint("deleteWorkerPool", "DELETE", POOL,
             lambda call: _wm(call).pools.delete(_pool_id(call), utcnow(), by=call.actor),
             output_schema="worker-manager/worker-pool-full", wildcard="workerPoolId"),
    Endpoint("listWorkerPoolLaunchConfigs", "GET", POOL + "/launch-configs",
             lambda call: paged(call.query, partial(_wm(call).pools.launch_configs, _pool_id(call))),
             query=(*PAGED, "includeArchived"), output_schema="worker-manager/worker-pool-launch-config-list"),
    Endpoint("workerPoolStats", "GET", POOL + "/stats",
             lambda call: _wm(call).pools.stats(_pool_id(call)), output_schema="worker-manager/worker-pool-stats",
             wildcard="workerPoolId"),
    Endpoint("workerPool", "GET", POOL,
             lambda call: _wm(call).pools.get(_pool_id(call)), output_schema="worker-manager/worker-pool-full",
             wildcard="workerPoolId"),
    Endpoint("listWorkerPools", "GET", "/worker-pools",
             lambda call: paged(call.query, _wm(call).pools.list),
             query=PAGED, output_schema="worker-manager/worker-pool-list"),
    Endpoint("listWorkerPoolsStats", "GET", "/worker-pools/stats",
             lambda call: paged(call.query, _wm(call).pools.stats_page),
             query=PAGED, output_schema="worker-manager/worker-pool-list-stats"),
    Endpoint("reportWorkerError", "POST", "/worker-pool-errors/<workerPoolId>",
             lambda call: _wm(call).pools.report_error(_pool_id(call), call.body, utcnow()),
             input_schema="worker-manager/report-worker-error-request",
             output_schema="worker-manager/worker-pool-error", wildcard="workerPoolId"),
    Endpoint("workerPoolErrorStats", "GET", "/worker-pool-errors/stats",
             lambda call: _wm(call).pools.error_stats(call.query.get("workerPoolId", ""), call.authorize, utcnow()),
             query=("workerPoolId",), output_schema="worker-manager/worker-pool-error-stats"),
    Endpoint("listWorkerPoolErrors", "GET", "/worker-pool-errors/<workerPoolId>",
             lambda call: paged(call.query, partial(_wm(call).errors.list, _pool_id(call),
                                                    error_id=call.query.get("errorId"))),
             query=(*PAGED, "errorId"), output_schema="worker-manager/worker-pool-error-list",
             wildcard="workerPoolId"),
    Endpoint("listWorkersForWorkerGroup", "GET", "/workers/<workerPoolId>/<workerGroup>", _list_workers,
             query=PAGED, output_schema="worker-manager/worker-list"),
    Endpoint("worker", "GET", WORKER,
             lambda call: _wm(call).workers.get(*_worker(call)), output_schema="worker-manager/worker-full"),
    Endpoint("createWorker", "PUT", WORKER,
             lambda call: _wm(call).workers.create(*_worker(call), call.body, utcnow()),
             input_schema="worker-manager/create-worker-request", output_schema="worker-manager/worker-full",
             hidden=("providerInfo",)),
    Endpoint("updateWorker", "POST", WORKER,
             lambda call: _wm(call).workers.update(*_worker(call), call.body, utcnow()),
             input_schema="worker-manager/create-worker-request", output_schema="worker-manager/worker-full",
             hidden=("providerInfo",)),
    Endpoint("removeWorker", "DELETE", WORKER,
             lambda call: _wm(call).workers.remove(*_worker(call), utcnow())),
    Endpoint("shouldWorkerTerminate", "GET", WORKER + "/should-terminate",
             lambda call: _wm(call).workers.should_terminate(*_worker(call)),
             output_schema="worker-manager/should-worker-terminate-response"),
    Endpoint("listWorkersForWorkerPool", "GET", "/workers/<workerPoolId>", _list_workers,
             query=(*PAGED, "state"), output_schema="worker-manager/worker-list", wildcard="workerPoolId"),
    Endpoint("registerWorker", "POST", "/worker/register",
             lambda call: _wm(call).credentials.register(call.body, utcnow()),
             input_schema="worker-manager/register-worker-request",
             output_schema="worker-manager/register-worker-response",
             hidden=("workerIdentityProof",)),
    Endpoint("reregisterWorker", "POST", "/worker/reregister",
             lambda call: _wm(call).credentials.reregister(call.body, utcnow()),
             input_schema="worker-manager/reregister-worker-request",
             output_schema="worker-manager/reregister-worker-response",
             hidden=("secret",)),
    # The queue's workers of a pool, as the worker manager shows them; the queue has calls of the
    # same names, with scopes of its own.
    Endpoint("listWorkers", "GET", QUEUE_WORKERS, _list_queue_workers,
             query=(*PAGED, "quarantined", "workerState"), output_schema="worker-manager/list-workers-response",
             scoped_as="worker-manager.listWorkers"),
    Endpoint("getWorker", "GET", QUEUE_WORKERS + "/<workerGroup>/<workerId>",
             lambda call: _metadata(call).get(call.params["provisionerId"], call.params["workerType"],
                                              call.params["workerGroup"], call.params["workerId"], utcnow()),
             output_schema="worker-manager/worker-response", scoped_as="worker-manager.getWorker"),
]
