"""Reading artifacts needs `queue:get-artifact:<name>`, which every caller holds for
`public/` names (the anonymous role) and no other without a grant; a link needs it for
every name it leads through; signed URLs carry their client's. Through a real host, its
real artifact endpoints and the official client."""

from __future__ import annotations

import json

import pytest
import requests
import taskcluster

from shared.domain.ids import new_slugid
from tests.conftest import ROOT_CREDENTIALS, make_task, start_server

from tests.api.conftest import refusal

CLIENTS = {
    "nobody": {"clientId": "static/nobody", "accessToken": "nobody-token-" + "n" * 30, "scopes": []},
    "builds": {"clientId": "static/builds", "accessToken": "builds-token-" + "b" * 30,
               "scopes": ["queue:get-artifact:private/build/*"]},
}
QUEUE = "scopes-test/artifacts"


@pytest.fixture(scope="module")
def host(azurite, tmp_path_factory):
    clients = [{**ROOT_CREDENTIALS, "scopes": ["*"]}, *CLIENTS.values()]
    server = start_server(azurite, tmp_path_factory.mktemp("artifact-scopes"), STATIC_CLIENTS=json.dumps(clients))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def task_id(host) -> str:
    """A completed task with public, private and link artifacts."""
    queue, task_id = host.client(), new_slugid()
    queue.createTask(task_id, make_task(QUEUE))
    queue.claimWork(QUEUE, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    expires = queue.task(task_id)["expires"]
    for name in ("public/logs/live.log", "private/build/key.pem", "private/other/key.pem"):
        queue.createArtifact(task_id, "0", name, {"storageType": "reference", "contentType": "text/plain",
                                                  "url": f"https://example.com/{name}", "expires": expires})
    queue.createArtifact(task_id, "0", "public/leak", {"storageType": "link", "contentType": "text/plain",
                                                       "artifact": "private/build/key.pem", "expires": expires})
    queue.reportCompleted(task_id, "0")
    return task_id


def client(host, who: str | None) -> taskcluster.Queue:
    credentials = {"credentials": {key: CLIENTS[who][key] for key in ("clientId", "accessToken")}} if who else {}
    return taskcluster.Queue({"rootUrl": host.root_url, "maxRetries": 0, **credentials})


@pytest.mark.parametrize("who", [None, "nobody"])
def test_a_scopeless_caller_reads_public_artifacts_only(host, task_id, who):
    reader = client(host, who)
    assert reader.getArtifact(task_id, "0", "public/logs/live.log")["url"].endswith("public/logs/live.log")
    assert reader.latestArtifact(task_id, "public/logs/live.log")["storageType"] == "reference"
    for call, args in [(reader.getArtifact, (task_id, "0", "private/build/key.pem")),
                       (reader.getLatestArtifact, (task_id, "private/build/key.pem")),
                       (reader.artifact, (task_id, "0", "private/build/key.pem")),
                       (reader.getArtifact, (task_id, "0", "public/leak"))]:   # a link leads there too
        status, body = refusal(call, *args)
        assert (status, body["code"]) == (403, "InsufficientScopes")
        assert "queue:get-artifact:private/build/key.pem" in body["message"]


def test_a_granted_prefix_reads_private_artifacts_and_its_signed_urls_do_too(host, task_id):
    builds = client(host, "builds")
    assert builds.getArtifact(task_id, "0", "private/build/key.pem")["url"].endswith("private/build/key.pem")
    assert builds.getArtifact(task_id, "0", "public/leak")["url"].endswith("private/build/key.pem")
    assert refusal(builds.getArtifact, task_id, "0", "private/other/key.pem")[0] == 403
    signed = builds.buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem")
    answer = requests.get(signed, allow_redirects=False)
    assert answer.status_code == 303 and answer.headers["Location"].endswith("private/build/key.pem")
    assert requests.get(signed.split("?")[0], allow_redirects=False).status_code == 403
    expired = builds.buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem", expiration=-1)
    assert requests.get(expired, allow_redirects=False).status_code == 401
    other = client(host, "nobody").buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem")
    assert requests.get(other, allow_redirects=False).status_code == 403


def test_a_claims_credentials_create_artifacts_for_their_run_only(host):
    queue, task_id = host.client(), new_slugid()
    queue.createTask(task_id, make_task(QUEUE))
    claim = queue.claimWork(QUEUE, {"workerGroup": "wg", "workerId": "w2", "tasks": 1})["tasks"][0]
    worker = taskcluster.Queue({"rootUrl": host.root_url, "maxRetries": 0, "credentials": claim["credentials"]})
    body = {"storageType": "error", "reason": "file-missing-on-worker",
            "message": "no such file", "expires": queue.task(task_id)["expires"]}
    assert worker.createArtifact(task_id, "0", "public/missing", body) == {"storageType": "error"}
    other = new_slugid()
    queue.createTask(other, make_task(QUEUE))
    queue.claimWork(QUEUE, {"workerGroup": "wg", "workerId": "w3", "tasks": 1})
    assert refusal(worker.createArtifact, other, "0", "public/missing", body)[0] == 403
    worker.reportCompleted(task_id, "0")
    assert refusal(worker.createArtifact, task_id, "0", "public/late", body)[0] == 403
