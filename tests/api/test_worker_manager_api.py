"""The worker-manager API through a real host with the official `taskcluster.WorkerManager`
client: pools created, updated, listed and deleted with Taskcluster's scopes, bodies and
errors; static workers created, registered, reregistered and removed; a registration token
used twice refused; pool ids with their slash encoded or not routed as Taskcluster routes
them; the queue's workers of a pool (listWorkers, getWorker) and the pools' statistics."""

from __future__ import annotations

import uuid

import pytest
import requests
import taskcluster

from shared.domain.ids import new_slugid
from shared.validation import check_response
from tests.api.conftest import refusal, temporary
from tests.conftest import ROOT_CREDENTIALS, eventually

SECRET = new_slugid() + new_slugid()
POOL_BODY = {"providerId": "static", "description": "machines in the basement", "owner": "ops@example.com",
             "emailOnError": False, "config": {"workerConfig": {"shell": "bash"}}}


def manager(server, credentials: dict | None = ROOT_CREDENTIALS) -> taskcluster.WorkerManager:
    return taskcluster.WorkerManager({"rootUrl": server.root_url, "maxRetries": 0,
                                      **({"credentials": dict(credentials)} if credentials else {})})


def not_found(call, *args) -> bool:
    try:
        call(*args)
    except taskcluster.exceptions.TaskclusterRestFailure as failure:
        return failure.status_code == 404
    return False


@pytest.fixture
def pool_id() -> str:
    return f"wm-{uuid.uuid4().hex[:8]}/pool-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def wm(server) -> taskcluster.WorkerManager:
    return manager(server)


def test_a_pool_is_created_read_updated_listed_and_deleted(server, wm, pool_id):
    created = wm.createWorkerPool(pool_id, POOL_BODY)
    assert check_response("worker-manager/worker-pool-full", created) == []
    assert {key: created[key] for key in POOL_BODY} == POOL_BODY and created["workerPoolId"] == pool_id
    assert created["currentCapacity"] == 0 and created["runningCount"] == 0
    assert wm.workerPool(pool_id) == created
    # The same definition again is answered as the first was (Taskcluster's); another is a conflict.
    assert wm.createWorkerPool(pool_id, POOL_BODY) == created
    status, body = refusal(wm.createWorkerPool, pool_id, {**POOL_BODY, "description": "elsewhere"})
    assert (status, body["code"]) == (409, "RequestConflict")

    local = {**POOL_BODY, "providerId": "local", "config": {"maxCapacity": 2, "scalingRatio": 0.5}}
    updated = wm.updateWorkerPool(pool_id, {**local, "workerPoolId": pool_id, "created": created["created"]})
    assert updated["providerId"] == "local" and updated["config"] == local["config"]
    assert updated["created"] == created["created"] and updated["lastModified"] >= created["lastModified"]
    status, body = refusal(wm.updateWorkerPool, pool_id, {**local, "workerPoolId": "other/pool"})
    assert status == 400 and "workerPoolId" in body["message"]

    other = pool_id + "-b"
    wm.createWorkerPool(other, POOL_BODY)
    listed = [pool["workerPoolId"] for pool in wm.listWorkerPools()["workerPools"]]
    assert pool_id in listed and other in listed
    pages, token = [], None
    while True:   # a page at a time, as a continuation token says
        page = wm.listWorkerPools(query={"limit": 1, **({"continuationToken": token} if token else {})})
        pages.append([pool["workerPoolId"] for pool in page["workerPools"]])
        token = page.get("continuationToken")
        if not token:
            break
    assert all(len(names) <= 1 for names in pages) and [name for names in pages for name in names] == listed
    status, body = refusal(wm.listWorkerPools, query={"continuationToken": "garbage!"})
    assert (status, body["code"]) == (400, "InputError")   # Taskcluster's paginateResults
    wm.deleteWorkerPool(other)

    deleted = wm.deleteWorkerPool(pool_id)
    assert deleted["providerId"] == "null-provider" and deleted["config"] == local["config"]
    # Without workers, the provisioner removes it (its timer runs every other second here).
    eventually(lambda: not_found(wm.workerPool, pool_id), timeout=20, message="the deleted pool gone")


def test_bad_pools_are_refused_naming_the_field(wm, pool_id):
    cases = [
        ({**POOL_BODY, "providerId": "local", "config": {"maxCapacity": 100}}, "InputValidationError",
         "config.maxCapacity"),
        ({**POOL_BODY, "providerId": "local", "config": {"maxCapacity": 2, "minCapacity": 3}},
         "InputValidationError", "config.minCapacity"),
        ({**POOL_BODY, "providerId": "no-such-provider"}, "InputError", "Invalid Provider"),
        ({**POOL_BODY, "owner": 12}, "InputValidationError", "owner"),
    ]
    for body, code, named in cases:
        status, answer = refusal(wm.createWorkerPool, pool_id, body)
        assert (status, answer["code"]) == (400, code) and named in answer["message"], answer
    status, answer = refusal(wm.workerPool, "Not A Pool")
    assert (status, answer["code"]) == (400, "InvalidRequestArguments")
    assert refusal(wm.workerPool, pool_id)[0] == 404


def test_pools_need_taskclusters_scopes(server, wm, pool_id):
    manage_only = manager(server, temporary(ROOT_CREDENTIALS, [f"worker-manager:manage-worker-pool:{pool_id}"]))
    status, body = refusal(manage_only.createWorkerPool, pool_id, POOL_BODY)
    assert (status, body["code"]) == (403, "InsufficientScopes")
    assert "worker-manager:provider:static" in body["message"]
    admin = manager(server, temporary(ROOT_CREDENTIALS, [f"worker-manager:manage-worker-pool:{pool_id.split('/')[0]}/*",
                                                         "worker-manager:provider:static"]))
    admin.createWorkerPool(pool_id, POOL_BODY)
    assert manage_only.deleteWorkerPool(pool_id)["providerId"] == "null-provider"   # no provider scope needed
    for call, args in ((manage_only.workerPool, (pool_id,)), (manage_only.listWorkerPools, ()),
                       (manage_only.listProviders, ()), (manage_only.listWorkerPoolErrors, (pool_id,))):
        assert refusal(call, *args)[0] == 403
    assert refusal(manager(server, None).workerPool, pool_id)[0] == 403
    reader = manager(server, temporary(ROOT_CREDENTIALS, ["worker-manager:get-worker-pool:*",
                                                          "worker-manager:list-providers"]))
    assert reader.workerPool(pool_id)["workerPoolId"] == pool_id
    providers = reader.listProviders()["providers"]
    assert {"providerId": "local", "providerType": "local"} in providers
    assert "null-provider" not in [provider["providerId"] for provider in providers]


def test_a_static_worker_registers_reregisters_and_is_removed(server, wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    expires = taskcluster.stringDate(taskcluster.fromNow("1 day"))
    created = wm.createWorker(pool_id, "basement", "box-1", {"expires": expires, "capacity": 2,
                                                             "providerInfo": {"staticSecret": SECRET}})
    assert check_response("worker-manager/worker-full", created) == []
    assert (created["state"], created["capacity"], created["providerId"]) == ("running", 2, "static")
    anonymous = manager(server, None)
    proof = {"workerPoolId": pool_id, "providerId": "static", "workerGroup": "basement", "workerId": "box-1"}
    status, body = refusal(anonymous.registerWorker, {**proof, "workerIdentityProof": {"staticSecret": "x" * 44}})
    assert (status, body["code"]) == (400, "InputError")
    assert body["requestInfo"]["payload"] == {**proof, "workerIdentityProof": "(OMITTED)"}
    registered = anonymous.registerWorker({**proof, "workerIdentityProof": {"staticSecret": SECRET}})
    assert check_response("worker-manager/register-worker-response", registered) == []
    assert registered["workerConfig"] == {"shell": "bash"}
    assert registered["credentials"]["clientId"] == f"worker/static/{pool_id}/basement/box-1"

    # The credentials it got claim work from its queue as itself, reregister and remove it.
    as_worker = manager(server, registered["credentials"])
    queue = taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0, "credentials": registered["credentials"]})
    assert queue.claimWork(pool_id, {"workerGroup": "basement", "workerId": "box-1", "tasks": 1}) == {"tasks": []}
    assert refusal(queue.claimWork, pool_id, {"workerGroup": "basement", "workerId": "box-2", "tasks": 1})[0] == 403
    again = as_worker.reregisterWorker({"workerPoolId": pool_id, "workerGroup": "basement", "workerId": "box-1",
                                        "secret": registered["secret"]})
    assert check_response("worker-manager/reregister-worker-response", again) == []
    status, body = refusal(as_worker.reregisterWorker, {"workerPoolId": pool_id, "workerGroup": "basement",
                                                         "workerId": "box-1", "secret": registered["secret"]})
    assert (status, body["code"]) == (400, "InputError")   # that secret was replaced
    assert as_worker.shouldWorkerTerminate(pool_id, "basement", "box-1") == {"terminate": False, "reason": "none"}

    as_worker.removeWorker(pool_id, "basement", "box-1")
    assert wm.worker(pool_id, "basement", "box-1")["state"] == "stopped"
    assert as_worker.shouldWorkerTerminate(pool_id, "basement", "box-1")["terminate"] is True
    status, body = refusal(anonymous.registerWorker, {**proof, "workerIdentityProof": {"staticSecret": SECRET}})
    assert status == 400 and "not running" in body["message"]
    listed = wm.listWorkersForWorkerPool(pool_id, query={"state": "stopped"})["workers"]
    assert [worker["workerId"] for worker in listed] == ["box-1"]
    assert refusal(wm.listWorkersForWorkerPool, pool_id, query={"state": "sleeping"})[0] == 400


def test_a_static_pool_is_the_only_kind_whose_workers_are_created_by_hand(wm, pool_id):
    wm.createWorkerPool(pool_id, {**POOL_BODY, "providerId": "local", "config": {"maxCapacity": 1}})
    expires = taskcluster.stringDate(taskcluster.fromNow("1 day"))
    status, body = refusal(wm.createWorker, pool_id, "g", "w", {"expires": expires,
                                                                "providerInfo": {"staticSecret": SECRET}})
    assert (status, body["code"]) == (400, "InputError") and body["requestInfo"]["payload"]["providerInfo"] == "(OMITTED)"
    wm.deleteWorkerPool(pool_id)


def test_workers_report_errors_which_are_listed_with_the_pools(server, wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    worker = manager(server, temporary(ROOT_CREDENTIALS, [f"assume:worker-pool:{pool_id}",
                                                          "assume:worker-id:basement/box-9"]))
    report = {"workerGroup": "basement", "workerId": "box-9", "kind": "disk-full", "title": "Disk full",
              "description": "no space left on /", "extra": {"free": 0}}
    reported = worker.reportWorkerError(pool_id, report)
    assert check_response("worker-manager/worker-pool-error", reported) == []
    assert reported["extra"] == {"free": 0, "workerGroup": "basement", "workerId": "box-9"}
    assert refusal(worker.reportWorkerError, pool_id, {**report, "workerId": "box-8"})[0] == 403
    listed = wm.listWorkerPoolErrors(pool_id)
    assert check_response("worker-manager/worker-pool-error-list", listed) == []
    assert [error["errorId"] for error in listed["workerPoolErrors"]] == [reported["errorId"]]
    assert wm.listWorkerPoolErrors(pool_id, query={"errorId": reported["errorId"]})["workerPoolErrors"] == [reported]


def test_pool_ids_sent_encoded_stay_one_parameter_and_plain_slashes_route_as_taskclusters(server, wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    expires = taskcluster.stringDate(taskcluster.fromNow("1 day"))
    for group, worker in (("basement", "box-1"), ("basement", "box-2"), ("attic", "box-3")):
        wm.createWorker(pool_id, group, worker, {"expires": expires, "providerInfo": {"staticSecret": SECRET}})
    listed = wm.listWorkersForWorkerGroup(pool_id, "basement")
    assert check_response("worker-manager/worker-list", listed) == []
    assert [worker["workerId"] for worker in listed["workers"]] == ["box-1", "box-2"]
    page = wm.listWorkersForWorkerGroup(pool_id, "basement", query={"limit": 1})
    assert [worker["workerId"] for worker in page["workers"]] == ["box-1"] and page["continuationToken"]
    configs = wm.listWorkerPoolLaunchConfigs(pool_id)
    assert check_response("worker-manager/worker-pool-launch-config-list", configs) == []
    assert [(c["launchConfigId"], c["configuration"]) for c in configs["workerPoolLaunchConfigs"]] == \
        [("default", POOL_BODY["config"])]
    assert wm.workerPoolStats(pool_id)["launchConfigStats"][0]["runningCount"] == 3

    def raw(path: str) -> requests.Response:
        return requests.get(f"{server.root_url}/api/worker-manager/v1{path}", auth=server.auth, timeout=10)
    assert raw(f"/worker-pool/{pool_id}").json()["workerPoolId"] == pool_id    # `{*workerPoolId}`
    assert raw(f"/worker-pool/{pool_id}/stats").json() == wm.workerPoolStats(pool_id)
    assert raw(f"/worker-pool-errors/{pool_id}").json() == {"workerPoolErrors": []}
    # `/workers/:workerPoolId/:workerGroup` comes first in Taskcluster: this is a group of pool `p`.
    answer = raw(f"/workers/{pool_id}")
    assert (answer.status_code, answer.json()["requestInfo"]["method"]) == (400, "listWorkersForWorkerGroup")


def test_pool_and_error_statistics_of_one_pool_or_all(server, wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    wm.createWorker(pool_id, "g", "w", {"expires": taskcluster.stringDate(taskcluster.fromNow("1 day")),
                                        "capacity": 2, "providerInfo": {"staticSecret": SECRET}})
    stats, token = [], None
    while True:
        page = wm.listWorkerPoolsStats(query={"limit": 50, **({"continuationToken": token} if token else {})})
        assert check_response("worker-manager/worker-pool-list-stats", page) == []
        stats += page["workerPoolsStats"]
        token = page.get("continuationToken")
        if not token:
            break
    mine = [entry for entry in stats if entry["workerPoolId"] == pool_id]
    assert [(entry["runningCount"], entry["runningCapacity"], entry["currentCapacity"]) for entry in mine] == [(1, 2, 2)]

    worker = manager(server, temporary(ROOT_CREDENTIALS, [f"assume:worker-pool:{pool_id}", "assume:worker-id:g/w"]))
    worker.reportWorkerError(pool_id, {"workerGroup": "g", "workerId": "w", "kind": "disk-full", "title": "Disk full",
                                       "description": "no space left on /", "extra": {"code": "ENOSPC"}})
    errors = wm.workerPoolErrorStats(query={"workerPoolId": pool_id})
    assert check_response("worker-manager/worker-pool-error-stats", errors) == []
    totals = errors["totals"]
    assert (errors["workerPoolId"], totals["total"], totals["title"], totals["code"], totals["workerPool"]) == \
        (pool_id, 1, {"Disk full": 1}, {"ENOSPC": 1}, {pool_id: 1})
    assert len(totals["daily"]) == 7 and len(totals["hourly"]) == 24 and sum(totals["hourly"].values()) == 1
    everyone = wm.workerPoolErrorStats()
    assert everyone["workerPoolId"] == "" and everyone["totals"]["workerPool"][pool_id] == 1
    reader = manager(server, temporary(ROOT_CREDENTIALS, [f"worker-manager:list-worker-pool-errors:{pool_id}"]))
    assert reader.workerPoolErrorStats(query={"workerPoolId": pool_id})["totals"]["total"] == 1
    assert refusal(reader.workerPoolErrorStats)[0] == 403   # every pool's needs the scope for `*`
    assert refusal(wm.workerPoolErrorStats, query={"workerPoolId": pool_id + "-none"})[0] == 404


def test_the_queues_workers_of_a_pool_with_the_managers_view_of_each(server, wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    wm.createWorker(pool_id, "g", "managed", {"expires": taskcluster.stringDate(taskcluster.fromNow("1 day")),
                                              "capacity": 2, "providerInfo": {"staticSecret": SECRET}})
    queue = server.client()
    for worker_id in ("managed", "standalone"):   # the queue knows a worker from its first claimWork
        queue.claimWork(pool_id, {"workerGroup": "g", "workerId": worker_id, "tasks": 1})
    provisioner_id, worker_type = pool_id.split("/")
    listed = wm.listWorkers(provisioner_id, worker_type)
    assert check_response("worker-manager/list-workers-response", listed) == []
    shown = {worker["workerId"]: (worker["state"], worker["capacity"], worker["providerId"])
             for worker in listed["workers"]}
    assert shown == {"managed": ("running", 2, "static"), "standalone": ("standalone", 0, "none")}
    running = wm.listWorkers(provisioner_id, worker_type, query={"workerState": "running"})["workers"]
    assert [worker["workerId"] for worker in running] == ["managed"]
    got = wm.getWorker(provisioner_id, worker_type, "g", "managed")
    assert check_response("worker-manager/worker-response", got) == []
    assert (got["workerPoolId"], got["state"], got["recentTasks"]) == (pool_id, "running", [])
    assert refusal(wm.getWorker, provisioner_id, worker_type, "g", "never-claimed")[0] == 404
    # Its own scopes, not the queue's calls' of the same names.
    lister = manager(server, temporary(ROOT_CREDENTIALS, [f"worker-manager:list-workers:{pool_id}"]))
    assert len(lister.listWorkers(provisioner_id, worker_type)["workers"]) == 2
    queue_lister = manager(server, temporary(ROOT_CREDENTIALS, [f"queue:list-workers:{pool_id}"]))
    assert refusal(queue_lister.listWorkers, provisioner_id, worker_type)[0] == 403


def test_a_static_worker_created_again_needs_its_own_secret(wm, pool_id):
    wm.createWorkerPool(pool_id, POOL_BODY)
    expires = taskcluster.stringDate(taskcluster.fromNow("1 day"))
    created = wm.createWorker(pool_id, "g", "w", {"expires": expires, "providerInfo": {"staticSecret": SECRET}})
    later = taskcluster.stringDate(taskcluster.fromNow("2 days"))   # Taskcluster answers the worker as it is
    assert wm.createWorker(pool_id, "g", "w", {"expires": later, "providerInfo": {"staticSecret": SECRET}}) == created
    other = new_slugid() + new_slugid()
    status, body = refusal(wm.createWorker, pool_id, "g", "w", {"expires": expires,
                                                                "providerInfo": {"staticSecret": other}})
    assert (status, body["code"], body["message"]) == (400, "InputError", "worker already exists")
    for call in (wm.createWorker, wm.updateWorker):   # the schema leaves providerInfo to the provider
        status, body = refusal(call, pool_id, "g", "w2" if call == wm.createWorker else "w", {"expires": expires})
        assert (status, body["code"], body["message"]) == (400, "InputError", "no worker staticSecret provided")
