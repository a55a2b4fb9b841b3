"""`taskq pool ...` as a person runs it against a real host: a local pool created, a task
created for it and watched to completion on a worker the pool started, the pool shown,
updated, listed and deleted."""

from __future__ import annotations

import uuid

import pytest
import yaml

pytestmark = pytest.mark.slow


@pytest.fixture
def pool_id():
    return f"cli-{uuid.uuid4().hex[:8]}/builds"


def test_a_user_makes_a_pool_runs_a_task_on_it_and_deletes_it(taskq, tmp_path, pool_id):
    created = taskq("pool", "create", pool_id, "--max", "2", "--idle-timeout", "3", "--json")
    assert created.status == 0, created.stderr
    assert created.json()["config"] == {"maxCapacity": 2, "workerConfig": {"idleTimeoutSecs": 3}}
    path = tmp_path / "task.yml"
    path.write_text(yaml.safe_dump({"taskQueueId": pool_id, "payload": {"command": [["echo", "hello"]]}}))
    run = taskq("create", str(path), "--watch", timeout=90)
    assert run.status == 0 and "completed" in run.stderr, run.stderr

    shown = taskq("pool", "show", pool_id, "--json").json()
    [worker] = shown["workers"]
    assert worker["workerGroup"] == "local" and worker["state"] in ("running", "stopping", "stopped")
    assert taskq("pool", "update", pool_id, "--max", "3").status == 0
    listed = taskq("pool", "list")
    assert listed.status == 0 and any(line.startswith(f"{pool_id}  local") for line in listed.stdout.splitlines())
    assert taskq("pool", "show", pool_id, "--json").json()["workerPool"]["config"]["maxCapacity"] == 3
    assert taskq("pool", "errors", pool_id, "--json").json() == []
    deleted = taskq("pool", "delete", pool_id, "--json")
    assert deleted.status == 0 and deleted.json()["providerId"] == "null-provider"


def test_a_bad_pool_is_refused_with_the_servers_reason(taskq, pool_id):
    refused = taskq("pool", "create", pool_id, "--max", "1000")
    assert refused.status == 1 and refused.stderr.startswith("error: InputValidationError: config.maxCapacity")
    missing = taskq("pool", "show", "nobody/here")
    assert missing.status == 1 and "ResourceNotFound" in missing.stderr
