"""What each endpoint requires of its caller: one table, keyed by endpoint name.

The expressions are Taskcluster's (its API references, `queue-api.json`, `object-api.json`,
`hooks-api.json`, `index-api.json`, `secrets-api.json` and `worker-manager-api.json`, in the
notation of `shared/auth/expressions.py`), plus the scheduler's own. A `Requirement` says where
each parameter comes from:
- `scopes` is checked before the handler runs, with the URL's parameters and those
  `request(params, body)` reads from the body;
- `stored_scopes` is checked by the service, with what `stored(loaded, params)` reads from
  the task, group or definitions it loaded anyway (no extra storage read): the handler
  passes `call.authorize` into the service, which calls it before its first write. A list
  from `stored` means each item must satisfy `stored_scopes` (a graph's tasks);
- `run_bound`: the endpoint acts on the run in its URL, so credentials issued for that
  run by a claim work on it only while it is theirs (see `access.py`): while it runs, or,
  for the artifact calls (`run_bound=AFTER_EXCEPTION`), also while a run it resolved
  `exception` still takes artifacts (Taskcluster's 25 minutes: a cancelled run's log).
An endpoint listed as None is public. One missing from the table is refused to all but a
client holding `*`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from shared.domain.task_scopes import CREATE_TASK, task_creation


# `run_bound` of the artifact calls: the run's credentials also work after it resolved
# `exception`, while it still takes artifacts (`domain.artifacts.takes_artifacts`).
AFTER_EXCEPTION = "after exception"


@dataclass(frozen=True)
class Requirement:
    scopes: object = None
    request: Callable[[dict, object], dict] | None = None
    stored_scopes: object = None
    stored: Callable[[object, dict], dict | list[dict]] | None = None
    run_bound: bool | str = False    # True, or AFTER_EXCEPTION


GET_ARTIFACT = {"AllOf": [{"for": "name", "in": "names", "each": "queue:get-artifact:<name>"}]}


def _task_action(verb: str) -> Requirement:
    """scheduleTask, rerunTask, cancelTask: by the task's schedulerId, group or project."""
    return Requirement(stored_scopes={"AnyOf": [
        f"queue:{verb}:<schedulerId>/<taskGroupId>/<taskId>",
        f"queue:{verb}-in-project:<projectId>",
        {"AllOf": [f"queue:{verb}", "assume:scheduler-id:<schedulerId>/<taskGroupId>"]},
    ]}, stored=lambda record, params: {key: record.summary[key] for key in ("schedulerId", "taskGroupId", "projectId")})


def _group_action(scope: str) -> Requirement:
    """sealTaskGroup, cancelTaskGroup: by the group's schedulerId."""
    return Requirement(stored_scopes=scope, stored=lambda group, params: {"schedulerId": group.scheduler_id})


# What the caller must hold of the scopes it gives a client or role (all of them, or those added).
_EACH_SCOPE = {"for": "scope", "in": "scopes", "each": "<scope>"}
_EACH_SCOPE_ADDED = {"AllOf": [{"for": "scope", "in": "scopesAdded", "each": "<scope>"}]}


def _body(*names: str) -> Callable[[dict, object], dict]:
    return lambda params, body: {name: body[name] for name in names}


def _task_ids(params: dict, body) -> dict:
    return {"taskIds": body.get("taskIds", [])}   # the schema's default: none


def _names(params: dict, body) -> dict:
    return {"names": [params["name"]]}


def _namespace(params: dict, body) -> dict:
    """An optional namespace parameter: absent, the root."""
    return {"namespace": params.get("namespace", "")}


def _graph_tasks(definitions: dict, params: dict) -> list[dict]:
    return [task_creation(definition) for definition in definitions.values()]


_RESOLVE = Requirement("queue:resolve-task:<taskId>/<runId>", run_bound=True)
_CREATE_ARTIFACT = Requirement("queue:create-artifact:<taskId>/<runId>", run_bound=AFTER_EXCEPTION)
_READ_ARTIFACT = Requirement(GET_ARTIFACT, request=_names)
_UPLOAD = Requirement("object:upload:<projectId>:<name>", request=_body("projectId"))
_DOWNLOAD = Requirement("object:download:<name>")
_READ_GRAPH = Requirement("scheduler:get-task-graph:<taskGraphId>")
_WORKER = "<provisionerId>/<workerType>/<workerGroup>/<workerId>"
# Who writes a hook must hold its role: what its tasks may do is what the writer may grant.
_MODIFY_HOOK_AS_ITS_ROLE = Requirement({"AllOf": ["hooks:modify-hook:<hookGroupId>/<hookId>",
                                                  "assume:hook-id:<hookGroupId>/<hookId>"]})
_POOL_WORKER = "<workerPoolId>/<workerGroup>/<workerId>"
_MANAGE_POOL = Requirement({"AllOf": ["worker-manager:manage-worker-pool:<workerPoolId>",
                                      "worker-manager:provider:<providerId>"]}, request=_body("providerId"))

REQUIREMENTS: dict[str, Requirement | None] = {
    # public
    "ping": None, "lbheartbeat": None, "version": None, "heartbeat": None, "openapi": None,
    # tasks
    "task": Requirement("queue:get-task:<taskId>"),
    "status": Requirement("queue:status:<taskId>"),
    "tasks": Requirement({"AllOf": [{"for": "taskId", "in": "taskIds", "each": "queue:get-task:<taskId>"}]},
                         request=_task_ids),
    "statuses": Requirement({"AllOf": [{"for": "taskId", "in": "taskIds", "each": "queue:status:<taskId>"}]},
                            request=_task_ids),
    "listDependentTasks": Requirement("queue:list-dependent-tasks:<taskId>"),
    "createTask": Requirement(stored_scopes=CREATE_TASK, stored=lambda definition, params: task_creation(definition)),
    "scheduleTask": _task_action("schedule-task"),
    "rerunTask": _task_action("rerun-task"),
    "cancelTask": _task_action("cancel-task"),
    "changeTaskPriority": Requirement(
        stored_scopes={"AnyOf": ["queue:change-task-priority:<taskId>",
                                 "queue:change-task-priority-in-queue:<taskQueueId>"]},
        stored=lambda record, params: {"taskQueueId": record.summary["taskQueueId"]}),
    # task groups
    "listTaskGroup": Requirement("queue:list-task-group:<taskGroupId>"),
    # The browser view's list of recent groups (ours): whoever may list every group.
    "recentTaskGroups": Requirement("queue:list-task-group:*"),
    # Its feeds of a group's events (ours): they tell what listTaskGroup tells, so they ask
    # what it asks (anonymous callers have it by default, as the page's reads do).
    "createTaskGroupFeed": Requirement("queue:list-task-group:<taskGroupId>"),
    "readTaskGroupFeed": Requirement("queue:list-task-group:<taskGroupId>"),
    "getTaskGroup": Requirement("queue:list-task-group:<taskGroupId>"),
    # The watchdog's view of a group (ours) tells what listing it tells; asking it to cancel
    # the group once stalled is cancelling it later, so it asks what cancelTaskGroup asks.
    "taskGroupWatchdog": Requirement("queue:list-task-group:<taskGroupId>"),
    "taskGroupWatchdogView": Requirement("queue:list-task-group:<taskGroupId>"),
    "setTaskGroupWatchdog": _group_action("queue:cancel-task-group:<schedulerId>/<taskGroupId>"),
    "sealTaskGroup": _group_action("queue:seal-task-group:<schedulerId>/<taskGroupId>"),
    "cancelTaskGroup": _group_action("queue:cancel-task-group:<schedulerId>/<taskGroupId>"),
    "changeTaskGroupPriority": _group_action("queue:change-task-group-priority:<schedulerId>/<taskGroupId>"),
    # workers and their runs
    "claimWork": Requirement({"AllOf": ["queue:claim-work:<taskQueueId>", "queue:worker-id:<workerGroup>/<workerId>"]},
                             request=_body("workerGroup", "workerId")),
    "claimTask": Requirement(
        stored_scopes={"AllOf": ["queue:claim-task:<provisionerId>/<workerType>",
                                 "queue:worker-id:<workerGroup>/<workerId>"]},
        request=_body("workerGroup", "workerId"),
        stored=lambda record, params: {key: record.summary[key] for key in ("provisionerId", "workerType")}),
    "reclaimTask": Requirement("queue:reclaim-task:<taskId>/<runId>", run_bound=True),
    "reportCompleted": _RESOLVE,
    "reportFailed": _RESOLVE,
    "reportException": _RESOLVE,
    # artifacts
    "createArtifact": _CREATE_ARTIFACT,
    "finishArtifact": _CREATE_ARTIFACT,
    "getArtifact": _READ_ARTIFACT,
    "getLatestArtifact": _READ_ARTIFACT,
    "artifact": _READ_ARTIFACT,
    "latestArtifact": _READ_ARTIFACT,
    "listArtifacts": Requirement("queue:list-artifacts:<taskId>:<runId>"),
    "artifactInfo": Requirement("queue:list-artifacts:<taskId>:<runId>"),
    "listLatestArtifacts": Requirement("queue:list-artifacts:<taskId>"),
    "latestArtifactInfo": Requirement("queue:list-artifacts:<taskId>"),
    # task queues, provisioners and workers
    "listProvisioners": Requirement("queue:list-provisioners"),
    "getProvisioner": Requirement("queue:get-provisioner:<provisionerId>"),
    "listWorkerTypes": Requirement("queue:list-worker-types:<provisionerId>"),
    "getWorkerType": Requirement("queue:get-worker-type:<provisionerId>/<workerType>"),
    "declareProvisioner": Requirement({"AllOf": [{"for": "property", "in": "properties",
                                                  "each": "queue:declare-provisioner:<provisionerId>#<property>"}]},
                                      request=lambda params, body: {"properties": sorted(body)}),
    "declareWorkerType": Requirement({"AllOf": [{"for": "property", "in": "properties", "each":
                                                 "queue:declare-worker-type:<provisionerId>/<workerType>#<property>"}]},
                                     request=lambda params, body: {"properties": sorted(body)}),
    "pendingTasks": Requirement("queue:pending-count:<taskQueueId>"),
    "taskQueueCounts": Requirement({"AllOf": ["queue:pending-count:<taskQueueId>",
                                              "queue:claimed-count:<taskQueueId>"]}),
    "listPendingTasks": Requirement("queue:pending-list:<taskQueueId>"),
    "listClaimedTasks": Requirement("queue:claimed-list:<taskQueueId>"),
    "listTaskQueues": Requirement("queue:list-task-queues"),
    "getTaskQueue": Requirement("queue:get-task-queue:<taskQueueId>"),
    "listWorkers": Requirement("queue:list-workers:<provisionerId>/<workerType>"),
    "getWorker": Requirement(f"queue:get-worker:{_WORKER}"),
    "quarantineWorker": Requirement({"AllOf": [f"queue:quarantine-worker:{_WORKER}"]}),
    "declareWorker": Requirement({"AllOf": [{"for": "property", "in": "properties",
                                             "each": f"queue:declare-worker:{_WORKER}#<property>"}]},
                                 request=lambda params, body: {"properties": sorted(body)}),
    # the object service (artifact contents)
    "createUpload": _UPLOAD,
    "finishUpload": _UPLOAD,
    "startDownload": _DOWNLOAD,
    "object": _DOWNLOAD,
    "download": _DOWNLOAD,
    # the task-graph scheduler: its own scopes, and createTask's for every task it creates
    "createTaskGraph": Requirement("scheduler:create-task-graph:<taskGraphId>", stored_scopes=CREATE_TASK,
                                   stored=_graph_tasks),
    "extendTaskGraph": Requirement("scheduler:extend-task-graph:<taskGraphId>", stored_scopes=CREATE_TASK,
                                   stored=_graph_tasks),
    "getTaskGraphStatus": _READ_GRAPH,
    "inspectTaskGraph": _READ_GRAPH,
    # the hooks service (hooks-api.json); a trigger token is its own authority
    "listHookGroups": Requirement("hooks:list-hooks:"),
    "listHooks": Requirement("hooks:list-hooks:<hookGroupId>"),
    "hook": Requirement("hooks:get:<hookGroupId>:<hookId>"),
    "getHookStatus": Requirement("hooks:status:<hookGroupId>/<hookId>"),
    "createHook": _MODIFY_HOOK_AS_ITS_ROLE,
    "updateHook": _MODIFY_HOOK_AS_ITS_ROLE,
    "removeHook": Requirement("hooks:modify-hook:<hookGroupId>/<hookId>"),
    "triggerHook": Requirement("hooks:trigger-hook:<hookGroupId>/<hookId>"),
    "getTriggerToken": Requirement("hooks:get-trigger-token:<hookGroupId>/<hookId>"),
    "resetTriggerToken": Requirement("hooks:reset-trigger-token:<hookGroupId>/<hookId>"),
    "triggerHookWithToken": None,
    "listLastFires": Requirement("hooks:list-last-fires:<hookGroupId>/<hookId>"),
    # The browser view's hooks with their last fires (ours): whoever may list them all.
    "hookFires": Requirement({"AllOf": ["hooks:list-hooks:*", "hooks:list-last-fires:*"]}),
    # the index (index-api.json); the root namespace is "" (`/namespaces/`, `/tasks/`)
    "findTask": Requirement("index:find-task:<indexPath>"),
    "findTasksAtIndex": Requirement({"AllOf": [{"for": "indexPath", "in": "indexPaths",
                                                "each": "index:find-task:<indexPath>"}]},
                                    request=lambda params, body: {"indexPaths": body.get("indexes", [])}),
    "listNamespaces": Requirement("index:list-namespaces:<namespace>", request=_namespace),
    "listTasks": Requirement("index:list-tasks:<namespace>", request=_namespace),
    "insertTask": Requirement("index:insert-task:<namespace>"),
    "deleteTask": Requirement("index:delete-task:<namespace>"),
    "findArtifactFromTask": Requirement("queue:get-artifact:<name>"),
    # the auth service (auth-api.json): a client or role is given only scopes its writer holds
    "listClients": Requirement("auth:list-clients"),
    "client": Requirement("auth:get-client:<clientId>"),
    "createClient": Requirement({"AllOf": ["auth:create-client:<clientId>", _EACH_SCOPE]},
                                request=lambda params, body: {"scopes": body.get("scopes", [])}),
    "resetAccessToken": Requirement("auth:reset-access-token:<clientId>"),
    "updateClient": Requirement("auth:update-client:<clientId>", stored_scopes=_EACH_SCOPE_ADDED,
                                stored=lambda added, params: added),
    "enableClient": Requirement("auth:enable-client:<clientId>"),
    "disableClient": Requirement("auth:disable-client:<clientId>"),
    "deleteClient": Requirement("auth:delete-client:<clientId>"),
    "listRoles": Requirement("auth:list-roles"),
    "listRoles2": Requirement("auth:list-roles"),
    "listRoleIds": Requirement("auth:list-roles"),
    "role": Requirement("auth:get-role:<roleId>"),
    "createRole": Requirement({"AllOf": ["auth:create-role:<roleId>", _EACH_SCOPE]}, request=_body("scopes")),
    "updateRole": Requirement("auth:update-role:<roleId>", stored_scopes=_EACH_SCOPE_ADDED,
                              stored=lambda added, params: added),
    "deleteRole": Requirement("auth:delete-role:<roleId>"),
    "getEntityHistory": Requirement("auth:audit-history:<entityType>"),
    "listAuditHistory": Requirement("auth:client-audit-history:<clientId>"),
    "expandScopes": Requirement("auth:expand-scopes"),
    "currentScopes": Requirement("auth:current-scopes"),
    # Public: they authenticate what they are given (testAuthenticate: its own test client).
    "authenticateHawk": None, "testAuthenticate": None, "testAuthenticateGet": None,
    # secrets (secrets-api.json)
    "set": Requirement("secrets:set:<name>"),
    "remove": Requirement("secrets:set:<name>"),
    "get": Requirement("secrets:get:<name>"),
    "list": Requirement("secrets:list-secrets"),
    # the worker manager (worker-manager-api.json)
    "listProviders": Requirement("worker-manager:list-providers"),
    "createWorkerPool": _MANAGE_POOL,
    "updateWorkerPool": _MANAGE_POOL,
    "deleteWorkerPool": Requirement("worker-manager:manage-worker-pool:<workerPoolId>"),
    "workerPool": Requirement("worker-manager:get-worker-pool:<workerPoolId>"),
    "workerPoolStats": Requirement("worker-manager:get-worker-pool:<workerPoolId>"),
    "listWorkerPools": Requirement("worker-manager:list-worker-pools"),
    "listWorkerPoolErrors": Requirement("worker-manager:list-worker-pool-errors:<workerPoolId>"),
    "reportWorkerError": Requirement({"AllOf": ["assume:worker-pool:<workerPoolId>",
                                                "assume:worker-id:<workerGroup>/<workerId>"]},
                                     request=_body("workerGroup", "workerId")),
    "listWorkersForWorkerPool": Requirement("worker-manager:list-workers:<workerPoolId>"),
    "worker": Requirement(f"worker-manager:get-worker:{_POOL_WORKER}"),
    "createWorker": Requirement(f"worker-manager:create-worker:{_POOL_WORKER}"),
    "updateWorker": Requirement(f"worker-manager:update-worker:{_POOL_WORKER}"),
    "removeWorker": Requirement(f"worker-manager:remove-worker:{_POOL_WORKER}"),
    "shouldWorkerTerminate": Requirement(f"worker-manager:should-worker-terminate:{_POOL_WORKER}"),
    "registerWorker": None,   # the worker has no credentials yet: its proof of identity is checked instead
    "reregisterWorker": Requirement(f"worker-manager:reregister-worker:{_POOL_WORKER}",
                                    request=_body("workerPoolId", "workerGroup", "workerId")),
    "listWorkersForWorkerGroup": Requirement("worker-manager:list-workers:<workerPoolId>/<workerGroup>"),
    "listWorkerPoolsStats": Requirement("worker-manager:list-worker-pools"),
    "listWorkerPoolLaunchConfigs": Requirement("worker-manager:get-worker-pool:<workerPoolId>"),
    # The pool is in the query, or none (every pool's: `*`): the service authorizes it.
    "workerPoolErrorStats": Requirement(stored_scopes="worker-manager:list-worker-pool-errors:<workerPoolId>",
                                        stored=lambda pool_id, params: {"workerPoolId": pool_id}),
    # Named apart from the queue's calls of the same names (`Endpoint.scoped_as`).
    "worker-manager.listWorkers": Requirement("worker-manager:list-workers:<provisionerId>/<workerType>"),
    "worker-manager.getWorker": Requirement(f"worker-manager:get-worker:{_WORKER}"),
}
# Refused to all but `*` (the literal scope "*" is satisfied by the pattern "*" alone).
UNLISTED = Requirement("*")


def requirement(endpoint: str) -> Requirement | None:
    return REQUIREMENTS.get(endpoint, UNLISTED)


def expression(endpoint: str):
    """The endpoint's whole scope expression (its two parts together), for documentation."""
    found = requirement(endpoint)
    if found is None:
        return None
    parts = [part for part in (found.scopes, found.stored_scopes) if part is not None]
    if len(parts) == 1:
        return parts[0]
    # An AllOf inside the AllOf is its items (updateClient's scopes added, as Taskcluster writes it).
    return {"AllOf": [item for part in parts for item in (part["AllOf"] if _all_of(part) else [part])]}


def _all_of(part) -> bool:
    return isinstance(part, dict) and list(part) == ["AllOf"]
