"""`taskq hooks list|trigger|fires` through a real local host, as a person runs them: short
lines, `--json` for scripts, and the server's refusals as one line with a non-zero status."""

from __future__ import annotations

import json

import pytest

from tests.api.hooks_fixtures import GROUP, hook_definition, hooks_client, new_queue
from tests.api.hooks_fixtures import hooks_server  # noqa: F401 (a fixture the tests take by name)
from tests.taskq.conftest import run_taskq


@pytest.fixture
def taskq(hooks_server):
    return lambda *args, **options: run_taskq(hooks_server, *args, **options)


@pytest.fixture(scope="module")
def made(hooks_server) -> dict:
    """Two hooks: `cli/build` takes a branch; `cli/greedy` asks more than its role grants."""
    hooks, task_queue_id = hooks_client(hooks_server), new_queue()
    hooks.createHook(GROUP, "cli/build", hook_definition(
        task_queue_id, schedule=["0 0 4 * * *"], triggerSchema={"type": "object", "required": ["branch"],
                                                                "properties": {"branch": {"type": "string"}}},
        task={**hook_definition(task_queue_id)["task"], "payload": {"branch": {"$eval": "payload.branch"}}}))
    hooks.createHook(GROUP, "cli/greedy", hook_definition(task_queue_id, task={
        **hook_definition(task_queue_id)["task"], "scopes": ["secrets:get:production"]}))
    return {"queue": task_queue_id}


def test_list(taskq, made):
    listed = taskq("hooks", "list", GROUP)
    assert listed.status == 0, listed.stderr
    assert f"{GROUP}/cli/build  [0 0 4 * * *]  a test hook" in listed.stdout.splitlines()
    assert f"{GROUP}/cli/greedy  [-]  a test hook" in listed.stdout.splitlines()
    every = taskq("hooks", "list", "--json").json()["hooks"]
    assert {"cli/build", "cli/greedy"} <= {hook["hookId"] for hook in every if hook["hookGroupId"] == GROUP}


def test_trigger_then_fires(taskq, made, hooks_server, tmp_path):
    fired = taskq("hooks", "trigger", GROUP, "cli/build", "--payload", '{"branch": "main"}')
    assert fired.status == 0, fired.stderr
    task_id = fired.stdout.strip()
    assert hooks_server.client().task(task_id)["payload"] == {"branch": "main"}
    payload_file = tmp_path / "payload.json"
    payload_file.write_text(json.dumps({"branch": "release"}))
    again = taskq("hooks", "trigger", GROUP, "cli/build", "--payload", f"@{payload_file}", "--json")
    assert again.status == 0 and hooks_server.client().task(again.json()["taskId"])["payload"]["branch"] == "release"

    lines = taskq("hooks", "fires", GROUP, "cli/build").stdout.splitlines()
    assert len(lines) >= 2 and lines[1].split()[1:4] == ["triggerHook", task_id, "pending"]
    fires = taskq("hooks", "fires", GROUP, "cli/build", "--json", "--limit", "1").json()["lastFires"]
    assert [fire["taskId"] for fire in fires] == [again.json()["taskId"]]


def test_refusals_are_one_line(taskq, made):
    bad = taskq("hooks", "trigger", GROUP, "cli/build", "--payload", '{"branch": 3}')
    assert bad.status == 1 and bad.stdout == ""
    assert bad.stderr.startswith("error: InputError: payload.branch") and len(bad.stderr.strip().splitlines()) == 1
    greedy = taskq("hooks", "trigger", GROUP, "cli/greedy")
    assert greedy.status == 1 and greedy.stderr.startswith("error: InsufficientScopes: The role `hook-id:tests/cli/greedy`")
    assert len(greedy.stderr.strip().splitlines()) == 1
    fires = taskq("hooks", "fires", GROUP, "cli/greedy")
    assert fires.status == 0 and "error: InsufficientScopes: Client ID hook-id:tests/cli/greedy" in fires.stdout
    never = taskq("hooks", "fires", GROUP, "no-such-hook")
    assert never.status == 1 and never.stderr.strip() == "error: ResourceNotFound: No such hook or never fired"
    not_json = taskq("hooks", "trigger", GROUP, "cli/build", "--payload", "{nope")
    assert not_json.status == 1 and not_json.stderr.startswith("error: --payload is not JSON")
