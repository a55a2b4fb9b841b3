"""A host whose settings name the storage account without a key: it signs in to Tables,
Queues and Blobs with its managed identity (App Service's identity endpoint, stood in for
by `devhost.identity_endpoint`), on Azurite in OAuth mode, which takes bearer tokens only
over HTTPS. A task's whole life through the official client, and an artifact's bytes put to
and read from the URLs the host hands out, which are user delegation SAS. (Plain `requests`
moves the bytes: the client's upload helpers go through aiohttp, whose certificates are read
once at import, so this process could not make them trust the emulator's.)"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from devhost.azurite import ACCOUNT_KEY
from tests.api.test_artifacts import expires
from tests.conftest import eventually, identity_environment, identity_properties, start_server

TEXT = b"signed in without a key\n" * 4


def user_delegation(url: str) -> bool:
    """Whether `url` carries a user delegation SAS (signed with a key the identity was given)."""
    return {"skoid", "sktid", "ske", "sig"} <= set(parse_qs(urlsplit(url).query))


@pytest.fixture
def identity_server(oauth_azurite, identity_endpoint, tmp_path, monkeypatch):
    settings = {"AzureWebJobsStorage": "",   # no connection string: local.settings.json's is overridden
                **{f"AzureWebJobsStorage__{name}": value for name, value in identity_properties(oauth_azurite).items()},
                **identity_environment(oauth_azurite, identity_endpoint)}
    server = start_server(oauth_azurite, tmp_path, **settings)
    # This process reaches the blob URLs the host hands out, as a worker would: trusting the
    # emulator's certificate (`requests` reads REQUESTS_CA_BUNDLE).
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(oauth_azurite.certificate))
    yield server
    server.stop()


def test_a_task_and_its_artifact_through_a_host_signed_in_with_its_identity(identity_server, identity_endpoint,
                                                                             new_task, task_id, task_queue_id):
    assert not any(ACCOUNT_KEY in value for value in identity_server.env.values())   # no key given
    queue = identity_server.client()
    dependent = f"{task_id[:-2]}{'AA' if task_id[-2:] != 'AA' else 'BB'}"
    queue.createTask(task_id, new_task())
    queue.createTask(dependent, new_task(dependencies=[task_id]))
    claim = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})["tasks"][0]
    assert claim["status"]["taskId"] == task_id
    answer = queue.createArtifact(task_id, "0", "public/logs/live.log", {
        "storageType": "s3", "contentType": "text/plain", "expires": expires()})
    assert user_delegation(answer["putUrl"])
    put = requests.put(answer["putUrl"], data=TEXT, headers={"Content-Type": "text/plain"}, timeout=30)
    assert put.status_code == 201, put.text
    queue.reportCompleted(task_id, "0")

    redirect = requests.get(identity_server.url(f"/task/{task_id}/runs/0/artifacts/public%2Flogs%2Flive.log"),
                            allow_redirects=False, auth=identity_server.auth, timeout=30)
    assert redirect.status_code == 303 and user_delegation(redirect.headers["Location"])
    read = requests.get(redirect.headers["Location"], timeout=30)
    assert (read.content, read.headers["Content-Type"]) == (TEXT, "text/plain")
    assert queue.status(task_id)["status"]["state"] == "completed"
    eventually(lambda: queue.status(dependent)["status"]["state"] == "pending", timeout=20,
               message="the dependent scheduled")
    assert identity_endpoint.requests >= 1
    log = identity_server.log_path.read_text()
    assert "Traceback" not in log and "failed" not in log.lower(), log[-3000:]
