"""The auth service through a real host with the official `taskcluster.Auth` client: clients
made, used, changed, disabled and deleted; roles made and used (a hook's role among them);
scope expansion; authenticateHawk and testAuthenticate; Taskcluster's scopes on each call."""

from __future__ import annotations

from datetime import timedelta

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.validation import check_response
from tests.api.conftest import CREDENTIALS, refusal, service_client, temporary
from tests.api.hooks_fixtures import hook_definition
from tests.api.test_errors import rest_error
from tests.conftest import ROOT_CREDENTIALS


@pytest.fixture
def auth(auth_server) -> taskcluster.Auth:
    return service_client(taskcluster.Auth, auth_server)


@pytest.fixture
def name() -> str:
    """Client and role ids of the test's own."""
    return f"t{new_slugid()[:10]}"


def in_hours(hours: float) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def as_client(server, kind, credentials: dict):
    return service_client(kind, server, credentials)


def test_a_client_made_through_the_api_signs_requests(auth_server, auth, name):
    made = auth.createClient(f"project/{name}/ci", {"description": "CI", "expires": in_hours(1),
                                                    "scopes": ["assume:project:alpha", "secrets:get:x"]})
    assert check_response("auth/create-client-response", made) == []
    assert made["clientId"] == f"project/{name}/ci" and len(made["accessToken"]) == 44
    assert "queue:create-task:project:alpha" in made["expandedScopes"]   # the configured role's
    mine = {"clientId": made["clientId"], "accessToken": made["accessToken"]}
    current = as_client(auth_server, taskcluster.Auth, mine).currentScopes()["scopes"]
    assert "queue:create-task:project:alpha" in current and "secrets:get:x" in current
    shown = auth.client(made["clientId"])
    assert check_response("auth/get-client-response", shown) == [] and "accessToken" not in shown
    assert rest_error(auth.createClient, made["clientId"], {"description": "again", "expires": in_hours(1)}
                      ).status_code == 409
    again = auth.createClient(made["clientId"], {"description": "CI", "expires": made["expires"],   # a retry
                                                 "scopes": ["assume:project:alpha", "secrets:get:x"]})
    assert again["accessToken"] == made["accessToken"] and again["created"] == made["created"]


def test_changes_to_a_client_take_effect(auth_server, auth, name):
    client_id = f"project/{name}"
    made = auth.createClient(client_id, {"description": "d", "expires": in_hours(1), "scopes": ["secrets:get:a"]})
    credentials = {"clientId": client_id, "accessToken": made["accessToken"]}
    updated = auth.updateClient(client_id, {"description": "e", "expires": in_hours(2), "scopes": ["secrets:get:b"]})
    assert updated["scopes"] == ["secrets:get:b"] and updated["description"] == "e"
    assert "secrets:get:b" in as_client(auth_server, taskcluster.Auth, credentials).currentScopes()["scopes"]
    assert auth.disableClient(client_id)["disabled"] is True
    assert refusal(as_client(auth_server, taskcluster.Auth, credentials).currentScopes)[0] == 401
    assert auth.enableClient(client_id)["disabled"] is False
    reset = auth.resetAccessToken(client_id)
    assert refusal(as_client(auth_server, taskcluster.Auth, credentials).currentScopes)[0] == 401
    fresh = {"clientId": client_id, "accessToken": reset["accessToken"]}
    assert as_client(auth_server, taskcluster.Auth, fresh).currentScopes()["scopes"]
    auth.deleteClient(client_id)
    auth.deleteClient(client_id)   # gone already: still a success, as in Taskcluster
    assert rest_error(auth.client, client_id).status_code == 404
    assert refusal(as_client(auth_server, taskcluster.Auth, fresh).currentScopes)[0] == 401


def test_an_expired_client_cannot_authenticate(auth_server, auth, name):
    made = auth.createClient(name, {"description": "d", "expires": in_hours(-1)})
    status, body = refusal(as_client(auth_server, taskcluster.Auth, {"clientId": name,
                                                                    "accessToken": made["accessToken"]}).currentScopes)
    assert status == 401 and "expired" in body["message"]


def test_listing_clients_by_prefix_a_page_at_a_time(auth, name):
    for n in range(5):
        auth.createClient(f"{name}/{n}", {"description": str(n), "expires": in_hours(1)})
    auth.createClient(f"{name}x", {"description": "not under the prefix", "expires": in_hours(1)})
    seen, token = [], None
    while True:
        page = auth.listClients(query={"prefix": f"{name}/", "limit": 2, **({"continuationToken": token} if token else {})})
        assert check_response("auth/list-clients-response", page) == []
        seen += [client["clientId"] for client in page["clients"]]
        token = page.get("continuationToken")
        if not token:
            break
    assert seen == [f"{name}/{n}" for n in range(5)]


def test_what_a_caller_may_give_a_client(auth_server, auth, name):
    limited = as_client(auth_server, taskcluster.Auth, CREDENTIALS["limited"])   # auth:create-client:limited/*
    made = limited.createClient(f"limited/{name}", {"description": "d", "expires": in_hours(1),
                                                    "scopes": ["queue:get-task:*"]})
    assert made["scopes"] == ["queue:get-task:*"]
    refused = rest_error(limited.createClient, f"limited/{name}2", {"description": "d", "expires": in_hours(1),
                                                                   "scopes": ["queue:create-task:*"]})
    assert refused.status_code == 403 and refused.body["code"] == "InsufficientScopes"
    static = rest_error(auth.createClient, "static/mine", {"description": "d", "expires": in_hours(1)})
    assert static.status_code == 400 and static.body["code"] == "InputError"
    stars = rest_error(auth.createClient, name, {"description": "d", "expires": in_hours(1), "scopes": ["a:**"]})
    assert stars.status_code == 400


def test_a_role_made_through_the_api_is_assumed(auth_server, auth, name):
    role = auth.createRole(f"project:{name}", {"description": "r",
                                               "scopes": ["secrets:get:project/*", "queue:get-task:*"]})
    assert check_response("auth/get-role-response", role) == []
    assert role["expandedScopes"] == sorted({"assume:project:" + name, "secrets:get:project/*", "queue:get-task:*"})
    assert auth.createRole(f"project:{name}", {"description": "r",
                                               "scopes": ["queue:get-task:*", "secrets:get:project/*"]}) == role
    assert rest_error(auth.createRole, f"project:{name}", {"description": "other", "scopes": []}).status_code == 409
    assert "secrets:get:project/*" in auth.expandScopes({"scopes": [f"assume:project:{name}"]})["scopes"]
    made = auth.createClient(name, {"description": "d", "expires": in_hours(1), "scopes": [f"assume:project:{name}"]})
    assert "secrets:get:project/*" in made["expandedScopes"]
    assert auth.role(f"project:{name}")["roleId"] == f"project:{name}"
    assert f"project:{name}" in auth.listRoleIds()["roleIds"]
    assert any(each["roleId"] == f"project:{name}" for each in auth.listRoles())
    updated = auth.updateRole(f"project:{name}", {"description": "s", "scopes": ["secrets:get:other"]})
    assert updated["scopes"] == ["secrets:get:other"]
    auth.deleteRole(f"project:{name}")
    assert rest_error(auth.role, f"project:{name}").status_code == 404
    assert "secrets:get:other" not in auth.expandScopes({"scopes": [f"assume:project:{name}"]})["scopes"]


def test_listing_roles_a_page_at_a_time(auth, name):
    for n in range(3):
        auth.createRole(f"{name}:{n}", {"description": "r", "scopes": []})
    ids, token = [], None
    while True:
        page = auth.listRoles2(query={"limit": 1, **({"continuationToken": token} if token else {})})
        assert check_response("auth/list-roles2-response", page) == []
        ids += [role["roleId"] for role in page["roles"]]
        token = page.get("continuationToken")
        if not token:
            break
    assert [each for each in ids if each.startswith(name)] == [f"{name}:{n}" for n in range(3)]


def test_a_role_that_would_grow_without_bound_is_refused(auth, name):
    refused = rest_error(auth.createRole, f"{name}*", {"description": "r", "scopes": [f"assume:{name}x<..>"]})
    assert refused.status_code == 400 and refused.body["code"] == "InputError"
    assert rest_error(auth.role, f"{name}*").status_code == 404


def test_updating_a_role_needs_only_the_scopes_it_adds(auth_server, auth, name):
    auth.createRole(f"limited/{name}", {"description": "r", "scopes": ["queue:create-task:*"]})
    writer = auth.createClient(f"writer/{name}", {"description": "d", "expires": in_hours(1),
                                                  "scopes": [f"auth:update-role:limited/{name}", "queue:get-task:*"]})
    as_writer = as_client(auth_server, taskcluster.Auth, {"clientId": writer["clientId"],
                                                          "accessToken": writer["accessToken"]})
    kept = as_writer.updateRole(f"limited/{name}", {"description": "r", "scopes": ["queue:create-task:*",
                                                                                 "queue:get-task:*"]})
    assert kept["scopes"] == ["queue:create-task:*", "queue:get-task:*"]
    refused = rest_error(as_writer.updateRole, f"limited/{name}", {"description": "r", "scopes": ["secrets:get:*"]})
    assert refused.status_code == 403


def test_a_hooks_role_made_through_the_api_lets_its_hook_create_tasks(auth_server, auth, name):
    hooks = service_client(taskcluster.Hooks, auth_server)
    queue_id = f"{name}/test"
    hooks.createHook(name, "nightly", hook_definition(queue_id))
    refused = rest_error(hooks.triggerHook, name, "nightly", {})   # its role grants nothing yet
    assert refused.status_code == 403
    auth.createRole(f"hook-id:{name}/*", {"description": "what the group's hooks' tasks may do", "scopes": [
        "queue:create-task:project:none", "queue:scheduler-id:-", f"queue:create-task:lowest:{queue_id}"]})
    fired = hooks.triggerHook(name, "nightly", {})
    task = service_client(taskcluster.Queue, auth_server).task(fired["status"]["taskId"])
    assert task["taskQueueId"] == queue_id


def test_authenticate_hawk_answers_for_a_signed_request(auth_server, auth):
    signed = taskcluster.Queue({"rootUrl": "https://tc.example.com", "credentials": dict(ROOT_CREDENTIALS)})
    url = signed.buildSignedUrl(signed.funcinfo["task"]["name"], "abc")   # a bewit for a GET
    resource = url.split("https://tc.example.com", 1)[1]
    answer = auth.authenticateHawk({"method": "get", "resource": resource, "host": "tc.example.com", "port": 443})
    assert check_response("auth/authenticate-hawk-response", answer) == []
    assert answer["status"] == "auth-success" and answer["clientId"] == ROOT_CREDENTIALS["clientId"]
    assert answer["scheme"] == "bewit" and "*" in answer["scopes"]
    moved = auth.authenticateHawk({"method": "get", "resource": resource, "host": "elsewhere.example.com", "port": 443})
    assert moved["status"] == "auth-failed"
    unsigned = auth.authenticateHawk({"method": "get", "resource": "/x", "host": "tc.example.com", "port": 443})
    assert unsigned["status"] == "no-auth" and unsigned["scheme"] == "none"


def test_test_authenticate_as_client_libraries_use_it(auth_server):
    tester = {"clientId": "tester", "accessToken": "no-secret"}
    auth = as_client(auth_server, taskcluster.Auth, tester)
    answer = auth.testAuthenticate({"clientScopes": ["test:a", "test:b:*"], "requiredScopes": ["test:b:c"]})
    assert answer == {"clientId": "tester", "scopes": ["test:a", "test:b:*"]}
    refused = rest_error(auth.testAuthenticate, {"clientScopes": ["test:a"], "requiredScopes": ["test:b"]})
    assert refused.status_code == 403
    limited = taskcluster.Auth({"rootUrl": auth_server.root_url, "maxRetries": 0, "credentials": dict(tester),
                                "authorizedScopes": ["test:a"]})
    assert limited.testAuthenticate({"clientScopes": ["test:*"], "requiredScopes": ["test:a"]})["scopes"] == ["test:a"]
    temp = as_client(auth_server, taskcluster.Auth, temporary(tester, ["test:x"]))
    assert temp.testAuthenticate({"clientScopes": ["test:*"], "requiredScopes": ["test:x"]})["scopes"] == ["test:x"]
    assert auth.testAuthenticateGet()["clientId"] == "tester"
    wrong = as_client(auth_server, taskcluster.Auth, {"clientId": "tester", "accessToken": "wrong"})
    assert refusal(wrong.testAuthenticateGet)[0] == 401


def test_the_auth_calls_need_taskclusters_scopes(auth_server, name):
    nobody = as_client(auth_server, taskcluster.Auth, CREDENTIALS["nobody"])
    for call, args in ((nobody.listClients, ()), (nobody.client, (name,)), (nobody.listRoles, ()),
                       (nobody.expandScopes, ({"scopes": []},)),
                       (nobody.deleteRole, (name,)), (nobody.deleteClient, (name,))):
        assert rest_error(call, *args).status_code == 403


def test_configured_clients_are_shown_and_listed_but_not_changed(auth):
    root = auth.client(ROOT_CREDENTIALS["clientId"])
    assert check_response("auth/get-client-response", root) == []
    assert root["scopes"] == ["*"] and root["expires"] == "3000-01-01T00:00:00.000Z" and "accessToken" not in root
    listed = auth.listClients(query={"prefix": "static/"})["clients"]
    assert {CREDENTIALS["limited"]["clientId"], ROOT_CREDENTIALS["clientId"]} <= {each["clientId"] for each in listed}
    for call, args in ((auth.updateClient, (ROOT_CREDENTIALS["clientId"], {"description": "d", "expires": in_hours(1)})),
                       (auth.resetAccessToken, (ROOT_CREDENTIALS["clientId"],)),
                       (auth.deleteClient, (ROOT_CREDENTIALS["clientId"],))):
        refused = rest_error(call, *args)
        assert refused.status_code == 400 and refused.body["code"] == "InputError"
