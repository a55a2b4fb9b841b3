"""The audit history through a real host with the official clients: what creating, changing and
deleting a client, role, secret, hook and worker pool records, by the client who acted
(getEntityHistory, listAuditHistory), oldest first, a page at a time; the scopes each needs;
an entity with no history answered an empty list, as Taskcluster answers."""

from __future__ import annotations

from datetime import timedelta

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.validation import check_response
from tests.api.conftest import CREDENTIALS, refusal, service_client
from tests.api.test_errors import rest_error
from tests.conftest import ROOT_CREDENTIALS

ROOT = ROOT_CREDENTIALS["clientId"]
POOL = {"providerId": "static", "description": "d", "owner": "o@example.com", "emailOnError": False,
        "config": {"workerConfig": {}}}
HOOK = {"metadata": {"name": "h", "description": "d", "owner": "o@example.com", "emailOnError": False},
        "task": {"payload": {}}}


@pytest.fixture
def auth(auth_server) -> taskcluster.Auth:
    return service_client(taskcluster.Auth, auth_server)


@pytest.fixture
def name() -> str:
    return f"audit{new_slugid()[:10]}"


def in_hours(hours: float) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def history(auth, entity_type: str, entity_id: str) -> list[tuple[str, str]]:
    answer = auth.getEntityHistory(entity_type, entity_id)
    assert check_response("auth/get-entity-history-response", answer) == [] and "continuationToken" not in answer
    assert all((entry["entityType"], entry["entityId"]) == (entity_type, entity_id) for entry in answer["auditHistory"])
    return [(entry["actionType"], entry["clientId"]) for entry in answer["auditHistory"]]


def test_a_clients_changes_are_recorded_in_order(auth, name):
    before = utcnow() - timedelta(seconds=1)
    auth.createClient(name, {"description": "d", "expires": in_hours(1)})
    auth.updateClient(name, {"description": "e", "expires": in_hours(2)})
    auth.resetAccessToken(name)
    auth.disableClient(name)
    auth.enableClient(name)
    auth.deleteClient(name)
    assert history(auth, "client", name) == [(action, ROOT) for action in (
        "created", "updated", "access token reset", "client disabled", "client enabled", "deleted")]
    times = [parse_iso(entry["created"]) for entry in auth.getEntityHistory("client", name)["auditHistory"]]
    assert times == sorted(times) and before <= times[0] <= utcnow()
    assert rest_error(auth.createClient, "static/x", {"description": "d", "expires": in_hours(1)}).status_code == 400
    assert history(auth, "client", "static/x") == []   # refused: nothing recorded


def test_roles_secrets_hooks_and_worker_pools_are_recorded(auth_server, auth, name):
    auth.createRole(f"project:{name}", {"description": "d", "scopes": []})
    auth.updateRole(f"project:{name}", {"description": "e", "scopes": ["secrets:get:x"]})
    auth.deleteRole(f"project:{name}")
    secrets = service_client(taskcluster.Secrets, auth_server)
    secrets.set(f"{name}/s", {"secret": {"v": 1}, "expires": in_hours(1)})
    secrets.set(f"{name}/s", {"secret": {"v": 2}, "expires": in_hours(1)})
    secrets.remove(f"{name}/s")
    hooks = service_client(taskcluster.Hooks, auth_server)
    hooks.createHook(name, "nightly/build", HOOK)
    hooks.updateHook(name, "nightly/build", HOOK)
    hooks.removeHook(name, "nightly/build")
    pools = service_client(taskcluster.WorkerManager, auth_server)
    pools.createWorkerPool(f"{name}/pool", POOL)
    pools.updateWorkerPool(f"{name}/pool", {**POOL, "description": "e"})
    pools.deleteWorkerPool(f"{name}/pool")
    every = [(action, ROOT) for action in ("created", "updated", "deleted")]
    assert history(auth, "role", f"project:{name}") == every
    assert history(auth, "secret", f"{name}/s") == every
    assert history(auth, "hook", f"{name}/nightly/build") == every
    assert history(auth, "worker-pool", f"{name}/pool") == every


def test_a_clients_own_actions_are_listed_by_listAuditHistory_in_pages(auth_server, auth, name):
    made = auth.createClient(f"{name}/admin", {"description": "d", "expires": in_hours(1),
                                               "scopes": [f"auth:create-role:{name}:*", f"auth:delete-role:{name}:*"]})
    admin = service_client(taskcluster.Auth, auth_server, {"clientId": made["clientId"],
                                                           "accessToken": made["accessToken"]})
    for number in range(4):
        admin.createRole(f"{name}:{number}", {"description": "d", "scopes": []})
    admin.deleteRole(f"{name}:0")
    expected = [(f"{name}:{number}", "created") for number in range(4)] + [(f"{name}:0", "deleted")]
    whole = auth.listAuditHistory(made["clientId"])
    assert check_response("auth/get-entity-history-response", whole) == []
    assert [(entry["entityId"], entry["actionType"]) for entry in whole["auditHistory"]] == expected
    assert {(entry["entityType"], entry["clientId"]) for entry in whole["auditHistory"]} == {("role", made["clientId"])}
    pages, token = [], None
    while True:
        page = auth.listAuditHistory(made["clientId"], query={"limit": 2, **({"continuationToken": token} if token
                                                                            else {})})
        pages.append([(entry["entityId"], entry["actionType"]) for entry in page["auditHistory"]])
        token = page.get("continuationToken")
        if token is None:
            break
    assert pages == [expected[0:2], expected[2:4], expected[4:5]]
    assert auth.listAuditHistory(made["clientId"], query={"limit": 0}) == {"auditHistory": []}
    bad_token = rest_error(lambda: auth.listAuditHistory(made["clientId"], query={"continuationToken": "not a token!"}))
    assert bad_token.status_code == 400 and "continuationToken" in bad_token.body["message"]
    assert history(auth, "client", made["clientId"]) == [("created", ROOT)]   # made by the root client


def test_an_entity_without_history_is_an_empty_list_and_an_unknown_type_is_refused(auth, name):
    assert auth.getEntityHistory("client", f"never-{name}") == {"auditHistory": []}
    assert auth.listAuditHistory(f"never-{name}") == {"auditHistory": []}
    error = rest_error(auth.getEntityHistory, "task", name)
    assert error.status_code == 400 and "entityType" in error.body["message"]


def test_each_call_needs_its_scope(auth_server, auth, name):
    nobody = service_client(taskcluster.Auth, auth_server, CREDENTIALS["nobody"])
    status, body = refusal(nobody.getEntityHistory, "client", name)
    assert status == 403 and body["code"] == "InsufficientScopes" and "auth:audit-history:client" in body["message"]
    status, body = refusal(nobody.listAuditHistory, ROOT)
    assert status == 403 and f"auth:client-audit-history:{ROOT}" in body["message"]
    made = auth.createClient(f"{name}/reader", {"description": "d", "expires": in_hours(1),
                                                "scopes": ["auth:audit-history:role",
                                                           f"auth:client-audit-history:{name}/*"]})
    reader = service_client(taskcluster.Auth, auth_server, {"clientId": made["clientId"],
                                                            "accessToken": made["accessToken"]})
    assert reader.getEntityHistory("role", name) == {"auditHistory": []}
    assert reader.listAuditHistory(f"{name}/other") == {"auditHistory": []}
    assert refusal(reader.getEntityHistory, "client", name)[0] == 403
    assert refusal(reader.listAuditHistory, ROOT)[0] == 403
