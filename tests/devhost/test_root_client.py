"""`make run`'s local root client: made once, kept with the local data, printed at start
with the variables the official client reads, and accepted by the Queue."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest
import taskcluster

from devhost import root_client
from tests.conftest import ROOT, free_port, make_task, unique_prefix

from tests.devhost.conftest import eventually


def test_made_once_and_kept_unless_static_clients_are_set(tmp_path, monkeypatch):
    monkeypatch.delenv("STATIC_CLIENTS", raising=False)
    assert root_client.ensure({"STATIC_CLIENTS": '[{"clientId": "mine"}]'}, tmp_path) is None
    assert "STATIC_CLIENTS" not in os.environ

    root = root_client.ensure({}, tmp_path / "data")
    first = json.loads(os.environ["STATIC_CLIENTS"])
    assert first[0]["clientId"] == root_client.CLIENT_ID and first[0]["scopes"] == ["*"]
    assert len(first[0]["accessToken"]) >= 44
    assert not list(tmp_path.iterdir())                 # kept only once the host is up
    root.keep()
    assert stat.S_IMODE(root.path.stat().st_mode) == 0o600
    root_client.ensure({}, tmp_path / "data").keep()
    assert json.loads(os.environ["STATIC_CLIENTS"]) == first          # the same credentials next time
    text = root.banner("http://127.0.0.1:7071")
    assert f"export TASKCLUSTER_ACCESS_TOKEN={first[0]['accessToken']}" in text
    assert "export TASKCLUSTER_CLIENT_ID=static/local-root" in text
    assert "export TASKCLUSTER_ROOT_URL=http://127.0.0.1:7071" in text


@pytest.mark.timeout(120)
def test_the_printed_credentials_work_with_the_official_client(azurite, tmp_path):
    port, prefix = free_port(), unique_prefix()
    # The settings a new checkout has (local.settings.json is made by `make run`, not here),
    # without STATIC_CLIENTS: what makes the host make its root client.
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    env = {key: value for key, value in {**os.environ, **sample}.items() if key != "STATIC_CLIENTS"}
    env.update({"AzureWebJobsStorage": azurite.connection_string, "QUEUE_TABLE_PREFIX": prefix,
                "QUEUE_RESOLVED_QUEUE": f"{prefix}-resolved", "QUEUE_REPAIR_QUEUE": f"{prefix}-repairs",
                "QUEUE_GRAPH_QUEUE": f"{prefix}-graphs"})
    log_path = tmp_path / "devhost.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "devhost", "--app-dir", str(ROOT), "--port", str(port), "--azurite", "none",
         "--broker", "none", "--azurite-data", str(tmp_path / "data")],
        cwd=ROOT, env=env, stdout=log_path.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        printed = eventually(lambda: dict(re.findall(r"export (TASKCLUSTER_\w+)=(\S+)", log_path.read_text()))
                             if "TASKCLUSTER_ACCESS_TOKEN" in log_path.read_text() else None,
                             timeout=60, message="the root client's banner")
        assert printed["TASKCLUSTER_ROOT_URL"] == f"http://127.0.0.1:{port}"
        options = {"rootUrl": printed["TASKCLUSTER_ROOT_URL"], "maxRetries": 0,
                   "credentials": {"clientId": printed["TASKCLUSTER_CLIENT_ID"],
                                   "accessToken": printed["TASKCLUSTER_ACCESS_TOKEN"]}}
        task_id = taskcluster.slugId()
        taskcluster.Queue(options).createTask(task_id, make_task("local/root"))
        with pytest.raises(taskcluster.TaskclusterRestFailure) as refused:
            taskcluster.Queue({"rootUrl": options["rootUrl"], "maxRetries": 0}).createTask(
                taskcluster.slugId(), make_task("local/root"))
        assert refused.value.status_code == 403
        assert log_path.read_text().count(printed["TASKCLUSTER_ACCESS_TOKEN"]) == 1   # printed once
    finally:
        process.terminate()
        process.wait(timeout=20)
