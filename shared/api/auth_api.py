"""The auth service's API (`/api/auth/v1/...`), declared as data: Taskcluster's names, routes,
bodies and scopes (auth-api.json; the scopes are in `scopes.py`): clients and roles kept in
storage (`services/auth`), scope expansion, the audit history of clients, roles, secrets,
hooks and worker pools (getEntityHistory, listAuditHistory), and the authentication calls
other services and clients' tests make.

Not served: the cloud credentials calls (AWS, Azure, GCP, Sentry, websocktunnel, GitHub),
which need accounts this deployment does not hold.
"""

from __future__ import annotations

from shared.api.dispatch import Call
from shared.api.http import ApiResponse
from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls
from shared.auth.clients import ASSUME_ANONYMOUS, Realm
from shared.auth.errors import AuthenticationFailed, InsufficientScopes
from shared.auth.hawk import SignedRequest, authenticate, claimed_payload_hash
from shared.auth.refusals import insufficient

SERVICE_ROOT = "/auth/v1"
PAGED = ("continuationToken", "limit")
CLIENT = "/clients/<clientId>"
ROLE = "/roles/<roleId>"
# testAuthenticate's client, as Taskcluster's: its scopes are the request's `clientScopes`.
TESTER, TESTER_TOKEN = "tester", "no-secret"
TEST_GET_SCOPES = ("test:*", "auth:create-client:test:*")


def _deleted(call: Call, delete) -> ApiResponse:
    delete()
    return ApiResponse(204)


def _authenticate_hawk(call: Call) -> dict:
    """Whether the request described in the body is signed by a client of this deployment, and
    its scopes; its payload hash is the caller's to check (`hash`)."""
    body = call.body
    request = SignedRequest(body["method"].upper(), body["resource"], body["host"], body["port"],
                            body.get("authorization"), content=None)
    try:
        caller = authenticate(request, call.access.realm)
    except AuthenticationFailed as error:
        return {"status": "auth-failed", "message": str(error)}
    scopes = list(caller.scopes.scopes)
    if caller.client_id is None:
        return {"status": "no-auth", "scheme": "none", "scopes": scopes, "expires": caller.expires}
    answer = {"status": "auth-success", "scheme": caller.scheme, "scopes": scopes, "clientId": caller.client_id,
              "expires": caller.expires}
    payload_hash = claimed_payload_hash(body.get("authorization"))
    return {**answer, "hash": payload_hash} if payload_hash else answer


def _test_authenticate(call: Call, client_scopes: list[str], required: list[str]) -> dict:
    """The request checked as signed by the test client with `client_scopes`, then for
    `required`: what a client library's tests use to check their signing."""
    caller = call.access.authenticate(call.request, Realm({TESTER: (TESTER_TOKEN, client_scopes)}, {}, ()))
    if caller.client_id is None:
        raise AuthenticationFailed(f"Sign the request as the client `{TESTER}` (access token `{TESTER_TOKEN}`)")
    expression = {"AllOf": list(required)}
    if not caller.scopes.satisfies(expression):
        raise InsufficientScopes(insufficient(caller, expression))
    # Every caller holds `assume:anonymous`; the test client's answer lists only what it was given.
    scopes = [scope for scope in caller.scopes.scopes if scope != ASSUME_ANONYMOUS or scope in client_scopes]
    return {"clientId": caller.client_id, "scopes": scopes}


def _clients(call: Call):
    return call.services.clients


def _roles(call: Call):
    return call.services.roles


def _audit(call: Call):
    return call.services.audit_history


def _client_id(call: Call) -> str:
    return call.params["clientId"]


def _role_id(call: Call) -> str:
    return call.params["roleId"]


ENDPOINTS = [
    *service_calls("Taskcluster-compatible Authentication", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("listClients", "GET", "/clients/",
             lambda call: paged(call.query, lambda after, limit: _clients(call).list(call.query.get("prefix", ""),
                                                                                    after, limit)),
             query=("prefix", *PAGED), output_schema="auth/list-clients-response"),
    Endpoint("client", "GET", CLIENT, lambda call: _clients(call).get(_client_id(call)),
             output_schema="auth/get-client-response"),
    Endpoint("createClient", "PUT", CLIENT,
             lambda call: _clients(call).create(_client_id(call), call.body, by=call.actor),
             input_schema="auth/create-client-request", output_schema="auth/create-client-response"),
    Endpoint("resetAccessToken", "POST", CLIENT + "/reset",
             lambda call: _clients(call).reset_access_token(_client_id(call), by=call.actor),
             output_schema="auth/create-client-response"),
    Endpoint("updateClient", "POST", CLIENT,
             lambda call: _clients(call).update(_client_id(call), call.body, call.authorize, by=call.actor),
             input_schema="auth/create-client-request", output_schema="auth/get-client-response"),
    Endpoint("enableClient", "POST", CLIENT + "/enable",
             lambda call: _clients(call).enable(_client_id(call), by=call.actor),
             output_schema="auth/get-client-response"),
    Endpoint("disableClient", "POST", CLIENT + "/disable",
             lambda call: _clients(call).disable(_client_id(call), by=call.actor),
             output_schema="auth/get-client-response"),
    Endpoint("deleteClient", "DELETE", CLIENT,
             lambda call: _deleted(call, lambda: _clients(call).delete(_client_id(call), by=call.actor)), status=204),
    Endpoint("listAuditHistory", "GET", CLIENT + "/audit",
             lambda call: paged(call.query, lambda after, limit: _audit(call).client_history(_client_id(call), after,
                                                                                            limit)),
             query=PAGED, output_schema="auth/get-entity-history-response"),
    Endpoint("getEntityHistory", "GET", "/audit/<entityType>/<entityId>",
             lambda call: paged(call.query, lambda after, limit: _audit(call).entity_history(
                 call.params["entityType"], call.params["entityId"], after, limit)),
             query=PAGED, output_schema="auth/get-entity-history-response"),
    Endpoint("listRoles", "GET", "/roles/", lambda call: _roles(call).list_all(),
             output_schema="auth/list-roles-response"),
    Endpoint("listRoles2", "GET", "/roles2/", lambda call: paged(call.query, _roles(call).list),
             query=PAGED, output_schema="auth/list-roles2-response"),
    Endpoint("listRoleIds", "GET", "/roleids/", lambda call: paged(call.query, _roles(call).list_ids),
             query=PAGED, output_schema="auth/list-role-ids-response"),
    Endpoint("role", "GET", ROLE, lambda call: _roles(call).get(_role_id(call)),
             output_schema="auth/get-role-response"),
    Endpoint("createRole", "PUT", ROLE, lambda call: _roles(call).create(_role_id(call), call.body, by=call.actor),
             input_schema="auth/create-role-request", output_schema="auth/get-role-response"),
    Endpoint("updateRole", "POST", ROLE,
             lambda call: _roles(call).update(_role_id(call), call.body, call.authorize, by=call.actor),
             input_schema="auth/create-role-request", output_schema="auth/get-role-response"),
    Endpoint("deleteRole", "DELETE", ROLE,
             lambda call: _deleted(call, lambda: _roles(call).delete(_role_id(call), by=call.actor)), status=204),
    Endpoint("expandScopes", "POST", "/scopes/expand",
             lambda call: {"scopes": list(call.access.realm.expand(tuple(call.body["scopes"])).scopes)},
             input_schema="auth/scopeset", output_schema="auth/scopeset"),
    Endpoint("currentScopes", "GET", "/scopes/current",
             lambda call: {"scopes": list(call.guard.caller.scopes.scopes)}, output_schema="auth/scopeset"),
    Endpoint("authenticateHawk", "POST", "/authenticate-hawk", _authenticate_hawk,
             input_schema="auth/authenticate-hawk-request", output_schema="auth/authenticate-hawk-response"),
    Endpoint("testAuthenticate", "POST", "/test-authenticate",
             lambda call: _test_authenticate(call, call.body.get("clientScopes", []),
                                             call.body.get("requiredScopes", [])),
             input_schema="auth/test-authenticate-request", output_schema="auth/test-authenticate-response"),
    Endpoint("testAuthenticateGet", "GET", "/test-authenticate-get/",
             lambda call: _test_authenticate(call, list(TEST_GET_SCOPES), ["test:authenticate-get"]),
             output_schema="auth/test-authenticate-response"),
]
