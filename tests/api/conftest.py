"""A server with clients of several kinds and a role, for the authentication and
authorization tests, and helpers to call it as each of them."""

from __future__ import annotations

import json
import secrets

import pytest
import taskcluster

from tests.conftest import ROOT_CREDENTIALS, Server, start_server

CREATOR_SCOPES = [
    "queue:create-task:project:alpha", "queue:scheduler-id:alpha-ci", "queue:create-task:medium:*",
    "queue:route:index.alpha.*", "queue:cancel-task:alpha-ci/*", "queue:seal-task-group:alpha-ci/*",
    "queue:cancel-task-group:alpha-ci/*", "queue:schedule-task-in-project:alpha", "scheduler:create-task-graph:*",
]
SCOPES = {
    "nobody": [],
    "creator": ["assume:project:alpha"],                              # through QUEUE_ROLES
    "worker": ["queue:claim-work:*", "queue:worker-id:workers/*"],
    "limited": ["queue:get-task:*", "auth:create-client:limited/*"],
    "seed-form": ["queue:create-task:project:none", "queue:scheduler-id:-", "queue:create-task:lowest/*"],
}
CREDENTIALS = {name: {"clientId": f"static/{name}", "accessToken": secrets.token_urlsafe(33)} for name in SCOPES}
CREDENTIALS["root"] = ROOT_CREDENTIALS
AUTH_SETTINGS = {
    "STATIC_CLIENTS": json.dumps([{**ROOT_CREDENTIALS, "scopes": ["*"]}]
                                 + [{**CREDENTIALS[name], "scopes": scopes} for name, scopes in SCOPES.items()]),
    "QUEUE_ROLES": json.dumps([{"roleId": "project:alpha", "scopes": CREATOR_SCOPES}]),
}


@pytest.fixture(scope="session")
def auth_server(azurite, tmp_path_factory):
    # No QUEUE_PUBLIC_URL: the host then takes the origin from Host and X-Forwarded-*, which
    # the front-end tests rely on.
    server = start_server(azurite, tmp_path_factory.mktemp("auth"), **AUTH_SETTINGS, QUEUE_PUBLIC_URL="")
    yield server
    server.stop()


def as_client(server: Server, who: str | dict | None, **options) -> taskcluster.Queue:
    """The official client as `who` (a client's name here, credentials, or None: none)."""
    credentials = CREDENTIALS[who] if isinstance(who, str) else who
    return taskcluster.Queue({"rootUrl": server.root_url, "maxRetries": 0,
                              **({"credentials": dict(credentials)} if credentials else {}), **options})


def service_client(kind, server: Server, credentials: dict | None = ROOT_CREDENTIALS):
    """The official client of another service beside the Queue (`taskcluster.Index`,
    `taskcluster.Secrets`) at the server's root URL, as the root client by default, with
    `credentials`, or without any (None)."""
    return kind({"rootUrl": server.root_url, "maxRetries": 0,
                 **({"credentials": dict(credentials)} if credentials else {})})


def refusal(call, *args, **kwargs) -> tuple[int, dict]:
    """The status and body of a call expected to fail."""
    with pytest.raises(taskcluster.exceptions.TaskclusterFailure) as failure:
        call(*args, **kwargs)
    return failure.value.status_code, failure.value.body


def temporary(issuer: str | dict, scopes: list[str], name: str | None = None) -> dict:
    """Temporary credentials for an hour, made by the official client library."""
    credentials = CREDENTIALS[issuer] if isinstance(issuer, str) else issuer
    made = taskcluster.createTemporaryCredentials(credentials["clientId"], credentials["accessToken"],
                                                  taskcluster.fromNow("0 seconds"), taskcluster.fromNow("1 hour"),
                                                  scopes, name=name)
    return {key: value.decode() if isinstance(value, bytes) else value for key, value in made.items()}
