"""The scope table: every endpoint of our APIs, every endpoint of Taskcluster's queue, object
and worker-manager references and those of its auth reference we serve, with Taskcluster's
expressions."""

import json
from pathlib import Path

import pytest

from shared.api import (auth_api, hooks_api, index_api, openapi, queue_api, scheduler_api, secrets_api, ui_api,
                        worker_manager_api)
from shared.api.scopes import REQUIREMENTS, UNLISTED, expression, requirement

# The endpoint names of Taskcluster's references (queue-api.json, object-api.json).
QUEUE_REFERENCE = [
    "ping", "lbheartbeat", "version", "task", "tasks", "statuses", "status", "listTaskGroup", "cancelTaskGroup",
    "getTaskGroup", "sealTaskGroup", "listDependentTasks", "createTask", "scheduleTask", "rerunTask", "cancelTask",
    "changeTaskPriority", "changeTaskGroupPriority", "claimWork", "claimTask", "reclaimTask", "reportCompleted",
    "reportFailed", "reportException", "createArtifact", "finishArtifact", "getArtifact", "getLatestArtifact",
    "listArtifacts", "listLatestArtifacts", "artifactInfo", "latestArtifactInfo", "artifact", "latestArtifact",
    "listProvisioners", "getProvisioner", "pendingTasks", "taskQueueCounts", "listPendingTasks",
    "listClaimedTasks", "listWorkerTypes", "getWorkerType", "listTaskQueues", "getTaskQueue", "listWorkers",
    "getWorker", "quarantineWorker", "declareWorker", "heartbeat"]
OBJECT_REFERENCE = ["createUpload", "finishUpload", "startDownload", "object", "download"]
INDEX_REFERENCE = ["findTask", "findTasksAtIndex", "listNamespaces", "listTasks", "insertTask", "deleteTask",
                   "findArtifactFromTask"]
SECRETS_REFERENCE = ["set", "remove", "get", "list"]
REFERENCE_DIR = Path("/work/shared/reference/taskcluster")


def test_every_endpoint_is_in_the_table():
    served = [endpoint.scopes_key for endpoint in queue_api.ENDPOINTS + scheduler_api.ENDPOINTS + ui_api.ENDPOINTS
              + hooks_api.ENDPOINTS + index_api.ENDPOINTS + secrets_api.ENDPOINTS + worker_manager_api.ENDPOINTS
              + auth_api.ENDPOINTS]
    references = QUEUE_REFERENCE + OBJECT_REFERENCE + INDEX_REFERENCE + SECRETS_REFERENCE
    assert [name for name in served + references if name not in REQUIREMENTS] == []
    assert {endpoint.name for endpoint in index_api.ENDPOINTS} >= set(INDEX_REFERENCE)
    assert {endpoint.name for endpoint in secrets_api.ENDPOINTS} >= set(SECRETS_REFERENCE)
    assert requirement("somethingNew") is UNLISTED and UNLISTED.scopes == "*"


def test_following_a_groups_events_asks_what_listing_it_asks():
    for name in ("createTaskGroupFeed", "readTaskGroupFeed"):
        assert expression(name) == expression("listTaskGroup") == "queue:list-task-group:<taskGroupId>"


def test_only_the_service_endpoints_are_public():
    public = {name for name, needed in REQUIREMENTS.items() if needed is None}
    # triggerHookWithToken: the token is its own authority. registerWorker as in Taskcluster:
    # a worker has no credentials before it registers; the proof of identity in its body is
    # checked instead. The auth service's authentication calls check what they are given.
    assert public == {"ping", "lbheartbeat", "version", "heartbeat", "openapi", "triggerHookWithToken",
                      "registerWorker", "authenticateHawk", "testAuthenticate", "testAuthenticateGet"}


@pytest.mark.skipif(not REFERENCE_DIR.exists(), reason="Taskcluster's reference is not on this machine")
@pytest.mark.parametrize("reference", ["queue-api.json", "object-api.json", "hooks-api.json", "index-api.json",
                                       "secrets-api.json", "worker-manager-api.json", "auth-api.json"])
def test_the_expressions_are_taskclusters(reference):
    served = {"worker-manager-api.json": {e.name: e.scopes_key for e in worker_manager_api.ENDPOINTS},
              "auth-api.json": {e.name: e.scopes_key for e in auth_api.ENDPOINTS}}
    for entry in json.loads((REFERENCE_DIR / reference).read_text())["entries"]:
        if reference in served and entry["name"] not in served[reference]:
            continue   # not served (auth's cloud credentials, audit history)
        named = served[reference][entry["name"]] if reference in served else entry["name"]
        ours, theirs = expression(named), entry.get("scopes")
        if entry["name"] == "createTask":   # plus seed 001's form of the priority scope
            assert ours["AllOf"][:4] == theirs["AllOf"][:4]
            assert theirs["AllOf"][4]["AnyOf"][0] in ours["AllOf"][4]["AnyOf"]
        else:
            assert ours == theirs, entry["name"]


@pytest.mark.skipif(not REFERENCE_DIR.exists(), reason="Taskcluster's reference is not on this machine")
def test_the_hooks_api_is_taskclusters_every_call_at_its_route():
    ours = {endpoint.name: (endpoint.method, endpoint.route) for endpoint in hooks_api.ENDPOINTS}
    for entry in json.loads((REFERENCE_DIR / "hooks-api.json").read_text())["entries"]:
        assert ours[entry["name"]] == (entry["method"].upper(), entry["route"]), entry["name"]


def test_the_openapi_documents_show_each_operations_scopes():
    document = openapi.document(queue_api.ENDPOINTS, queue_api.SERVICE_ROOT, "Queue")
    assert document["paths"]["/task/{taskId}/runs/{runId}/completed"]["post"]["x-taskcluster-scopes"] == \
        "queue:resolve-task:<taskId>/<runId>"
    assert "x-taskcluster-scopes" not in document["paths"]["/ping"]["get"]


def test_the_worker_managers_listworkers_and_getworker_have_scopes_apart_from_the_queues():
    ours = {endpoint.name: endpoint for endpoint in worker_manager_api.ENDPOINTS}
    assert expression(ours["listWorkers"].scopes_key) == "worker-manager:list-workers:<provisionerId>/<workerType>"
    assert expression("listWorkers") == "queue:list-workers:<provisionerId>/<workerType>"
    assert expression(ours["getWorker"].scopes_key).startswith("worker-manager:get-worker:")
