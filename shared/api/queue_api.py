"""The Queue API (`/api/queue/v1/...`), declared as data: Taskcluster's names and routes.

Each handler translates one call into one service method; the rules live in the services.
What each endpoint requires of its caller is in `scopes.py`; a handler whose service reads
what the check needs hands it `call.authorize`. A taskQueueId takes its slash as it is
(`/pending/proj/linux`) where Taskcluster's route declares it `{*taskQueueId}`, not in
getTaskQueue's (`/task-queues/:taskQueueId`), as in Taskcluster (see `router.py`).
"""

from __future__ import annotations

from functools import partial

from shared.domain.timestamps import normalize_iso, to_iso, utcnow
from shared.api.artifact_api import ENDPOINTS as ARTIFACT_ENDPOINTS
from shared.api.dispatch import Call
from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/queue/v1"


def _run_id(call: Call) -> int:
    return int(call.params["runId"])


def _claim_work(call: Call) -> dict:
    body = call.body
    return call.services.work_claimer.claim_work(call.params["taskQueueId"], body["workerGroup"], body["workerId"],
                                        body.get("tasks", 1))


def _task_queue_id(call: Call) -> str:
    return f"{call.params['provisionerId']}/{call.params['workerType']}"


def _worker(call: Call) -> tuple[str, str, str]:
    return _task_queue_id(call), call.params["workerGroup"], call.params["workerId"]


def _claim_task(call: Call) -> dict:
    return call.services.work_claimer.claim_task(call.params["taskId"], _run_id(call), call.body["workerGroup"],
                                                 call.body["workerId"], call.authorize)


def _declare_worker_type(call: Call) -> dict:
    details = dict(call.body)
    if "expires" in details:
        details["expires"] = normalize_iso(details["expires"])
    return call.services.task_queues.declare_worker_type(call.params["provisionerId"], call.params["workerType"],
                                                         details, utcnow())


def _declare_worker(call: Call) -> dict:
    """The worker's queue is seen too, kept at least as long (as Taskcluster's does)."""
    expires = normalize_iso(call.body["expires"])
    call.services.task_queues.seen(_task_queue_id(call), expires)
    return call.services.workers.declare(*_worker(call), expires, utcnow())


PROVISIONER = "/provisioners/<provisionerId>"
WORKER_TYPE = PROVISIONER + "/worker-types/<workerType>"
WORKERS = WORKER_TYPE + "/workers"

ENDPOINTS = [
    *service_calls("Taskcluster-compatible Queue", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("task", "GET", "/task/<taskId>",
             lambda call: call.services.task_calls.definition(call.params["taskId"]),
             output_schema="task"),
    Endpoint("status", "GET", "/task/<taskId>/status",
             lambda call: {"status": call.services.task_calls.status(call.params["taskId"])},
             output_schema="task-status-response"),
    Endpoint("tasks", "POST", "/tasks",
             lambda call: paged(call.query, partial(call.services.task_calls.definitions, call.body.get("taskIds", []))),
             input_schema="tasks-request", query=("continuationToken", "limit"), output_schema="tasks-response"),
    Endpoint("statuses", "POST", "/tasks/status",
             lambda call: paged(call.query, partial(call.services.task_calls.statuses, call.body.get("taskIds", []))),
             input_schema="tasks-request", query=("continuationToken", "limit"), output_schema="tasks-statuses-response"),
    Endpoint("createTask", "PUT", "/task/<taskId>",
             lambda call: {"status": call.services.task_calls.create(call.params["taskId"], call.body, call.authorize)},
             input_schema="create-task-request", output_schema="task-status-response"),
    Endpoint("scheduleTask", "POST", "/task/<taskId>/schedule",
             lambda call: {"status": call.services.task_calls.schedule(call.params["taskId"], call.authorize)},
             output_schema="task-status-response"),
    Endpoint("rerunTask", "POST", "/task/<taskId>/rerun",
             lambda call: {"status": call.services.task_calls.rerun(call.params["taskId"], call.authorize)},
             output_schema="task-status-response"),
    Endpoint("cancelTask", "POST", "/task/<taskId>/cancel",
             lambda call: {"status": call.services.task_calls.cancel(call.params["taskId"], call.authorize)},
             output_schema="task-status-response"),
    Endpoint("changeTaskPriority", "POST", "/task/<taskId>/priority",
             lambda call: call.services.priorities.change_task(call.params["taskId"], call.body["newPriority"],
                                                               call.authorize),
             input_schema="change-task-priority-request", output_schema="task-status-response"),
    Endpoint("claimWork", "POST", "/claim-work/<taskQueueId>", _claim_work,
             input_schema="claim-work-request", output_schema="claim-work-response", wildcard="taskQueueId"),
    Endpoint("claimTask", "POST", "/task/<taskId>/runs/<runId>/claim", _claim_task,
             input_schema="task-claim-request", output_schema="task-claim-response"),
    Endpoint("reclaimTask", "POST", "/task/<taskId>/runs/<runId>/reclaim",
             lambda call: call.services.work_claimer.reclaim(call.params["taskId"], _run_id(call), call.authorize),
             output_schema="task-reclaim-response"),
    Endpoint("reportCompleted", "POST", "/task/<taskId>/runs/<runId>/completed",
             lambda call: call.services.resolutions.completed(call.params["taskId"], _run_id(call), call.authorize),
             output_schema="task-status-response"),
    Endpoint("reportFailed", "POST", "/task/<taskId>/runs/<runId>/failed",
             lambda call: call.services.resolutions.failed(call.params["taskId"], _run_id(call), call.authorize),
             output_schema="task-status-response"),
    Endpoint("reportException", "POST", "/task/<taskId>/runs/<runId>/exception",
             lambda call: call.services.resolutions.exception(call.params["taskId"], _run_id(call),
                                                           call.body["reason"], call.authorize),
             input_schema="task-exception-request", output_schema="task-status-response"),
    Endpoint("listTaskGroup", "GET", "/task-group/<taskGroupId>/list",
             lambda call: paged(call.query, partial(call.services.task_groups.list, call.params["taskGroupId"])),
             query=("continuationToken", "limit"), output_schema="list-task-group-response"),
    Endpoint("sealTaskGroup", "POST", "/task-group/<taskGroupId>/seal",
             lambda call: call.services.task_groups.seal(call.params["taskGroupId"], to_iso(utcnow()), call.authorize),
             output_schema="task-group-response"),
    Endpoint("cancelTaskGroup", "POST", "/task-group/<taskGroupId>/cancel",
             lambda call: call.services.task_groups.cancel(call.params["taskGroupId"],
                                                        call.services.task_calls.cancel_many, call.authorize),
             output_schema="cancel-task-group-response"),
    Endpoint("changeTaskGroupPriority", "POST", "/task-group/<taskGroupId>/priority",
             lambda call: call.services.priorities.change_group(call.params["taskGroupId"], call.body["newPriority"],
                                                                call.authorize),
             input_schema="change-task-priority-request", output_schema="task-group-priority-change-response"),
    Endpoint("listDependentTasks", "GET", "/task/<taskId>/dependents",
             lambda call: paged(call.query, partial(call.services.task_calls.dependents, call.params["taskId"])),
             query=("continuationToken", "limit"), output_schema="list-dependent-tasks-response"),
    Endpoint("getTaskGroup", "GET", "/task-group/<taskGroupId>",
             lambda call: call.services.task_groups.get(call.params["taskGroupId"]),
             output_schema="task-group-response"),
    Endpoint("pendingTasks", "GET", "/pending/<taskQueueId>",
             lambda call: call.services.task_queues.pending_count(call.params["taskQueueId"]),
             output_schema="pending-tasks-response", wildcard="taskQueueId"),
    Endpoint("taskQueueCounts", "GET", "/task-queues/<taskQueueId>/counts",
             lambda call: call.services.task_queues.counts(call.params["taskQueueId"]),
             output_schema="task-queue-counts-response", wildcard="taskQueueId"),
    Endpoint("listPendingTasks", "GET", "/task-queues/<taskQueueId>/pending",
             lambda call: paged(call.query, partial(call.services.task_queues.pending_runs, call.params["taskQueueId"])),
             query=("continuationToken", "limit"), output_schema="list-pending-tasks-response",
             wildcard="taskQueueId"),
    Endpoint("listClaimedTasks", "GET", "/task-queues/<taskQueueId>/claimed",
             lambda call: paged(call.query, partial(call.services.task_queues.claimed_runs, call.params["taskQueueId"])),
             query=("continuationToken", "limit"), output_schema="list-claimed-tasks-response",
             wildcard="taskQueueId"),
    Endpoint("listTaskQueues", "GET", "/task-queues",
             lambda call: paged(call.query, lambda after, limit: call.services.task_queues.list(after, limit, utcnow())),
             query=("continuationToken", "limit"), output_schema="list-taskqueues-response"),
    Endpoint("getTaskQueue", "GET", "/task-queues/<taskQueueId>",
             lambda call: call.services.task_queues.get(call.params["taskQueueId"], utcnow()),
             output_schema="taskqueue-response"),
    # Provisioners and worker types: Taskcluster's deprecated views of the task queues.
    Endpoint("listProvisioners", "GET", "/provisioners",
             lambda call: paged(call.query, lambda after, limit: call.services.task_queues.provisioners(
                 after, limit, utcnow())),
             query=("continuationToken", "limit"), output_schema="list-provisioners-response"),
    Endpoint("getProvisioner", "GET", PROVISIONER,
             lambda call: call.services.task_queues.provisioner(call.params["provisionerId"], utcnow()),
             output_schema="provisioner-response"),
    # Taskcluster's answers the provisioner as it is: its details are no longer kept.
    Endpoint("declareProvisioner", "PUT", PROVISIONER,
             lambda call: call.services.task_queues.provisioner(call.params["provisionerId"], utcnow()),
             input_schema="update-provisioner-request", output_schema="provisioner-response"),
    Endpoint("listWorkerTypes", "GET", PROVISIONER + "/worker-types",
             lambda call: paged(call.query, lambda after, limit: call.services.task_queues.worker_types(
                 call.params["provisionerId"], after, limit, utcnow())),
             query=("continuationToken", "limit"), output_schema="list-workertypes-response"),
    Endpoint("getWorkerType", "GET", WORKER_TYPE,
             lambda call: call.services.task_queues.worker_type(call.params["provisionerId"],
                                                                call.params["workerType"], utcnow()),
             output_schema="workertype-response"),
    Endpoint("declareWorkerType", "PUT", WORKER_TYPE, _declare_worker_type,
             input_schema="update-workertype-request", output_schema="workertype-response"),
    Endpoint("listWorkers", "GET", WORKERS,
             lambda call: paged(call.query, lambda after, limit: call.services.workers.list(
                 _task_queue_id(call), after, limit, call.query.get("quarantined"), utcnow())),
             query=("continuationToken", "limit", "quarantined"), output_schema="list-workers-response"),
    Endpoint("getWorker", "GET", WORKERS + "/<workerGroup>/<workerId>",
             lambda call: call.services.workers.get(*_worker(call), utcnow()),
             output_schema="worker-response"),
    # quarantineUntil is kept in Taskcluster's form, as every stored time: UTC, `Z`, 4-digit year.
    Endpoint("quarantineWorker", "PUT", WORKERS + "/<workerGroup>/<workerId>",
             lambda call: call.services.workers.quarantine(*_worker(call), normalize_iso(call.body["quarantineUntil"]),
                                                           call.body.get("quarantineInfo", ""), utcnow(),
                                                           client_id=call.client_id or "anonymous"),
             input_schema="quarantine-worker-request", output_schema="worker-response"),
    Endpoint("declareWorker", "PUT", WORKER_TYPE + "/<workerGroup>/<workerId>",
             _declare_worker, input_schema="update-worker-request", output_schema="worker-response"),
    *ARTIFACT_ENDPOINTS,
]
