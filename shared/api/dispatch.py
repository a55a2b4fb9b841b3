"""One API request in, one response out: match, authenticate, check, validate, authorize,
call, render errors.

No input can produce a 500 except a storage outage: every rule breach is a QueueError
with Taskcluster's code, raised before anything is written; every credential problem an
AuthenticationFailed (401), every missing scope an InsufficientScopes (403), also raised
before anything is written (the scopes that depend on stored data are checked by the
service through `call.authorize`, right after it reads that data).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Callable

from shared.auth.errors import AuthError
from shared.domain.errors import MalformedPayload, NotFound, QueueError, TooLarge
from shared.services.task_groups.group_feeds import MAX_WAIT
from shared.api import cors
from shared.api.paging import parse_limit
from shared.api.access import Access, Guard
from shared.api.errors import InvalidRequestArguments, error_response
from shared.api.http import ApiRequest, ApiResponse
from shared.api.router import Endpoint, check_params, match
from shared.domain.ids import SLUGID_PATTERN
from shared.validation import ecma_regex, validate

log = logging.getLogger("queue.api")
MAX_BODY_BYTES = 10 * 1024 * 1024
# Deeper JSON would exhaust the recursion of the parser or of the schema validator.
MAX_NESTING = 100


@dataclass
class Call:
    """What a handler gets: decoded parameters, checked query, validated body, and the
    scope checks that need stored data (`authorize`)."""

    params: dict
    query: dict
    body: object
    get_services: Callable[[], object]
    guard: Guard
    access: Access | None = None        # who may call: the app's realm (the auth service's calls)
    request: ApiRequest | None = None   # as received (testAuthenticate, public, checks its signature itself)

    @property
    def services(self):
        """The Queue's services (built on first use, so a bad request costs no storage)."""
        return self.get_services()

    @property
    def client_id(self) -> str | None:
        """Who is calling (None without credentials), as a hook's context names it."""
        return self.guard.caller.client_id

    @property
    def actor(self) -> str:
        """Who acts, as an audit history entry names it (Taskcluster's `req.clientId()`): the
        clientId, or `auth-failed:no-auth` without credentials."""
        return self.guard.caller.client_id or "auth-failed:no-auth"

    def authorize(self, loaded) -> None:
        """For the service: check what the endpoint requires of what it loaded (a task or
        group record, definitions), before its first write. See `api/scopes.py`."""
        self.guard.authorize(loaded)

    def require(self, **values) -> None:
        """Check the endpoint's scopes again with more parameters (an artifact link's target)."""
        self.guard.require(**values)


def dispatch(endpoints: list[Endpoint], request: ApiRequest, services: Callable[[], object],
             access: Callable[[], Access]) -> ApiResponse:
    """The answer, with Taskcluster's CORS headers whatever it is (see `cors.py`)."""
    answer = cors.preflight(endpoints, request.path) if request.method == "OPTIONS" else None
    return cors.with_headers(answer or _answer(endpoints, request, services, access))


def _answer(endpoints: list[Endpoint], request: ApiRequest, services: Callable[[], object],
            access: Callable[[], Access]) -> ApiResponse:
    found = match(endpoints, request.method, request.path)
    if found is None:
        error = NotFound(f"No endpoint answers {request.method} {request.path}")
        return error_response(error, "unknown", {}, None)
    endpoint, params = found
    payload, guard = None, None
    try:
        checker = access()
        guard = checker.guard(endpoint.scopes_key, request, params)
        guard.check_url()
        check_params(params)
        query = _check_query(endpoint, request.query)
        payload = _parse_body(endpoint, request.body, request.headers.get("content-type", ""))
        if endpoint.input_schema:
            validate(endpoint.input_schema, payload, hidden=endpoint.hidden)
        guard.check_request(payload)
        answer = endpoint.handler(Call(params, query, payload, services, guard, checker, request))
        if guard.pending:  # a handler that forgot to hand `call.authorize` to its service
            log.error("%s answered without checking the scopes that need its stored data", endpoint.name)
            raise QueueError("Internal error: the request was not authorized")
        return answer if isinstance(answer, ApiResponse) else ApiResponse(200, answer)
    except (QueueError, AuthError) as error:
        return _refused(guard.refusal(error) if guard else error, endpoint.name, params, _shown(endpoint, payload))
    except Exception:  # a storage outage or a bug: say so in Taskcluster's shape
        log.exception("%s %s failed", endpoint.name, _logged_path(endpoint, params))
        return error_response(QueueError("Internal error; the request may be retried"), endpoint.name, params,
                              _shown(endpoint, payload))


def _shown(endpoint: Endpoint, payload):
    """The payload as an error shows it: its hidden fields replaced (see `Endpoint.hidden`)."""
    if not endpoint.hidden or not isinstance(payload, dict):
        return payload
    return {key: "(OMITTED)" if key in endpoint.hidden else value for key, value in payload.items()}


SECRET_PARAMS = ("token",)   # a hook's trigger token: never in a log line


def _logged_path(endpoint: Endpoint, params: dict) -> str:
    """The request's path for a log line, its secret parameters masked."""
    return "/" + "/".join(f"({segment[1:-1]})" if segment[1:-1] in SECRET_PARAMS
                          else params.get(segment[1:-1], segment) if segment.startswith("<") else segment
                          for segment in endpoint.segments)


def _refused(error, endpoint: str, params: dict, payload) -> ApiResponse:
    response = error_response(error, endpoint, params, payload)
    if error.code == "AuthenticationFailed":
        response.headers["www-authenticate"] = "hawk"
    return response


# The query options `_check_query` accepts, as JSON Schemas (for the OpenAPI document).
QUERY_OPTIONS = {
    "continuationToken": {"type": "string"},
    "prefix": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1},
    "quarantined": {"enum": ["true", "false"]},
    "wait": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT},
    "state": {"enum": ["requested", "running", "stopping", "stopped"]},
    "errorId": {"type": "string", "pattern": SLUGID_PATTERN},
    # the worker manager's: workerPoolErrorStats, listWorkerPoolLaunchConfigs, listWorkers
    "workerPoolId": {"type": "string", "pattern": "^([a-zA-Z0-9/-]+)?$"},
    "includeArchived": {"enum": ["true", "false"]},
    "workerState": {"enum": ["requested", "running", "stopping", "stopped"]},
}


def _check_query(endpoint: Endpoint, query: dict) -> dict:
    checked = {name: value for name, value in query.items() if name in endpoint.query}
    if "limit" in checked:   # a listing (it takes a token) answers an empty page to 0, as Taskcluster's
        checked["limit"] = parse_limit(checked["limit"], zero="continuationToken" in endpoint.query)
    if "wait" in checked:
        checked["wait"] = _wait(checked["wait"])
    if checked.get("quarantined", "true") not in ("true", "false"):
        raise InvalidRequestArguments(f"quarantined: {checked['quarantined']!r} must be true or false")
    for name in ("state", "errorId", "workerPoolId", "includeArchived", "workerState"):
        if name in checked and not _allowed(QUERY_OPTIONS[name], checked[name]):
            raise InvalidRequestArguments(f"{name}: {checked[name][:50]!r} is not a valid {name}")
    return checked


def _allowed(option: dict, value: str) -> bool:
    if "enum" in option:
        return value in option["enum"]
    return bool(ecma_regex(option["pattern"]).search(value))


def _wait(text: str) -> int:
    """Seconds a long poll may wait: whole, from 0; more than it ever waits is clamped."""
    if not re.fullmatch("[0-9]{1,6}", text):
        raise InvalidRequestArguments(f"wait: {text[:50]!r} must be a whole number of seconds")
    return min(int(text), MAX_WAIT)


def _parse_body(endpoint: Endpoint, body: bytes, content_type: str = ""):
    if len(body) > MAX_BODY_BYTES:
        raise TooLarge(f"The request body is {len(body)} bytes; at most {MAX_BODY_BYTES} are accepted")
    if not endpoint.input_schema:
        return None
    if not body.strip():
        # Taskcluster's reading: an empty JSON body is {} (its schema then names what is
        # missing); a call that takes JSON sent nothing that says it is JSON is malformed.
        if content_type.split(";")[0].strip().lower() == "application/json":
            return {}
        raise MalformedPayload("The request body is empty; this call takes a JSON object "
                               "(content-type: application/json)")
    try:
        payload = json.loads(body, parse_constant=_no_constant, parse_float=_number)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedPayload(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise MalformedPayload(f"The request body nests deeper than {MAX_NESTING} levels") from None
    _check_nesting(payload)
    return payload


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _number(text: str) -> float | int:
    """JSON has one number type: `5.0` is the integer 5 to JSON Schema (and to Taskcluster,
    in JavaScript), so it passes `"type": "integer"`; handed on as a float it would break the
    code that counts with it (`range(5.0)`). Integral values a double holds exactly become ints."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a JSON number")
    return int(value) if value.is_integer() and abs(value) <= 2 ** 53 else value


def _check_nesting(payload) -> None:
    level = [payload]
    for _ in range(MAX_NESTING + 1):
        level = [child for value in level if isinstance(value, (dict, list))
                 for child in (value.values() if isinstance(value, dict) else value)]
        if not level:
            return
    raise MalformedPayload(f"The request body nests deeper than {MAX_NESTING} levels")
