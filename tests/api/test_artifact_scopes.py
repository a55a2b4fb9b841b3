"""Reading artifacts needs `queue:get-artifact:<name>`, which every caller holds for
`public/` names (the anonymous role) and no other without a grant; signed URLs carry
their client's. The artifact endpoints are being added by another branch: until they are
here, stand-ins with Taskcluster's names and routes answer behind the real dispatch and
scope checks, served by the local host and called through the official client."""

from __future__ import annotations

import json

import azure.functions as func
import pytest
import requests
import taskcluster

from devhost.host import LocalHost
from shared.api.access import Access
from shared.api.router import Endpoint
from shared.auth.clients import Realm
from shared.domain.ids import new_slugid
from shared.functions.http_bindings import serve

from .conftest import refusal

CLIENTS = {
    "nobody": {"clientId": "static/nobody", "accessToken": "nobody-token-" + "n" * 30, "scopes": []},
    "builds": {"clientId": "static/builds", "accessToken": "builds-token-" + "b" * 30,
               "scopes": ["queue:get-artifact:private/build/*"]},
}
ROUTES = {"getArtifact": "/task/<taskId>/runs/<runId>/artifacts/<name>",
          "getLatestArtifact": "/task/<taskId>/artifacts/<name>",
          "artifact": "/task/<taskId>/runs/<runId>/artifact-content/<name>",
          "latestArtifact": "/task/<taskId>/artifact-content/<name>"}
STAND_INS = [Endpoint(name, "GET", route, lambda call: {"storageType": "reference", "name": call.params["name"]})
             for name, route in ROUTES.items()]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    app_dir = tmp_path_factory.mktemp("artifacts")
    (app_dir / "host.json").write_text(json.dumps({"version": "2.0"}))
    access = Access(Realm.from_settings(json.dumps(list(CLIENTS.values())), "", ""))
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="queue/v1/{*path}", methods=["GET"])
    def queue_api(req: func.HttpRequest) -> func.HttpResponse:
        return serve(req, STAND_INS, "/queue/v1", access=lambda: access)

    host = LocalHost(app_dir, port=0, app=app).start()
    yield host
    host.stop()


def client(host: LocalHost, who: str | None) -> taskcluster.Queue:
    credentials = {"credentials": {key: CLIENTS[who][key] for key in ("clientId", "accessToken")}} if who else {}
    return taskcluster.Queue({"rootUrl": host.base_url, "maxRetries": 0, **credentials})


@pytest.mark.parametrize("who", [None, "nobody"])
def test_a_scopeless_caller_reads_public_artifacts_only(artifacts, who):
    task_id, reader = new_slugid(), client(artifacts, who)
    assert reader.getArtifact(task_id, "0", "public/logs/live.log")["name"] == "public/logs/live.log"
    assert reader.latestArtifact(task_id, "public/build/target.tar.gz")["name"] == "public/build/target.tar.gz"
    for call, args in [(reader.getArtifact, (task_id, "0", "private/build/key.pem")),
                       (reader.getLatestArtifact, (task_id, "private/build/key.pem")),
                       (reader.artifact, (task_id, "0", "private/build/key.pem"))]:
        status, body = refusal(call, *args)
        assert (status, body["code"]) == (403, "InsufficientScopes")
        assert "queue:get-artifact:private/build/key.pem" in body["message"]


def test_a_granted_prefix_reads_private_artifacts_and_its_signed_urls_do_too(artifacts):
    task_id, builds = new_slugid(), client(artifacts, "builds")
    assert builds.getArtifact(task_id, "0", "private/build/key.pem")["name"] == "private/build/key.pem"
    assert refusal(builds.getArtifact, task_id, "0", "private/other/key.pem")[0] == 403
    signed = builds.buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem")
    assert requests.get(signed).json()["name"] == "private/build/key.pem"
    assert requests.get(signed.split("?")[0]).status_code == 403
    expired = builds.buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem", expiration=-1)
    assert requests.get(expired).status_code == 401
    other = client(artifacts, "nobody").buildSignedUrl("getArtifact", task_id, "0", "private/build/key.pem")
    assert requests.get(other).status_code == 403
