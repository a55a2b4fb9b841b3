"""What the hooks tests share: a host whose roles give hooks of the group `tests` what their
tasks need (and no more), clients of a few kinds, and a hook definition to start from."""

from __future__ import annotations

import json
import secrets
import uuid

import pytest
import taskcluster

from tests.conftest import ROOT_CREDENTIALS, Server, start_server

GROUP = "tests"
PROVISIONER = "hooks-tests"
# A hook of the group `tests` may create tasks of the default project and scheduler, at the
# lowest priority, on the hooks' queues, with routes under index.hooks; nothing else.
ROLE_SCOPES = ["queue:create-task:project:none", "queue:scheduler-id:-",
               f"queue:create-task:lowest:{PROVISIONER}/*", "queue:route:index.hooks.*"]
CLIENTS = {
    "trigger-only": ["hooks:trigger-hook:tests/*"],
    "editor": ["hooks:modify-hook:tests/*", "hooks:get:tests:*"],
    "editor-with-role": ["hooks:modify-hook:tests/*", "assume:hook-id:tests/*"],
}
CREDENTIALS = {name: {"clientId": f"static/{name}", "accessToken": secrets.token_urlsafe(33)} for name in CLIENTS}
SETTINGS = {
    "STATIC_CLIENTS": json.dumps([{**ROOT_CREDENTIALS, "scopes": ["*"]}]
                                 + [{**CREDENTIALS[name], "scopes": scopes} for name, scopes in CLIENTS.items()]),
    "QUEUE_ROLES": json.dumps([{"roleId": f"hook-id:{GROUP}/*", "scopes": ROLE_SCOPES}]),
}


@pytest.fixture(scope="module")
def hooks_server(azurite, tmp_path_factory):
    """A host with SETTINGS' clients and roles, for a test module (import the fixture there)."""
    server = start_server(azurite, tmp_path_factory.mktemp("hooks"), **SETTINGS)
    yield server
    server.stop()


def hooks_client(server: Server, who: str | None = "root") -> taskcluster.Hooks:
    """The official Hooks client as the root client, one of CLIENTS, or nobody (None)."""
    credentials = ROOT_CREDENTIALS if who == "root" else CREDENTIALS.get(who)
    return taskcluster.Hooks({"rootUrl": server.root_url, "maxRetries": 0,
                              **({"credentials": dict(credentials)} if credentials else {})})


def new_queue() -> str:
    """A task queue of the hooks' provisioner no other test uses."""
    return f"{PROVISIONER}/q{uuid.uuid4().hex[:12]}"


def hook_definition(task_queue_id: str, **overrides) -> dict:
    """A hook whose task runs on `task_queue_id` and shows its JSON-e context in its payload."""
    return {
        "metadata": {"name": "a test hook", "description": "made by the test suite", "owner": "tests@example.com",
                     "emailOnError": False},
        "task": {"taskQueueId": task_queue_id,
                 "payload": {"firedBy": {"$eval": "firedBy"}, "now": {"$eval": "now"}, "taskId": {"$eval": "taskId"}},
                 "metadata": {"name": "fired by a hook", "description": "a hook's task", "owner": "tests@example.com",
                              "source": "https://example.com/hooks"}},
        **overrides,
    }
