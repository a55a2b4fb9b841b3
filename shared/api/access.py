"""Who is calling and whether they may: between routing and the handler.

`Access.authenticate` verifies the request's Hawk header or bewit (or finds none: the
anonymous scopes) against the public URL the client signed. A `Guard` then checks the
endpoint's `Requirement` (see `scopes.py`): what the URL and body allow at once, and,
through `call.authorize`, what the service reads from storage.

The public URL: the host and port a client signed are those of the URL it called, which
behind Azure's front end (or any proxy) are not the ones this process listens on. With
`QUEUE_PUBLIC_URL` set, they are taken from it and nothing a request says can change them.
Without it, from `X-Forwarded-Host` (else `Host`), `X-Forwarded-Port` (else the port in that
host, else the default of `X-Forwarded-Proto`, else of the request's scheme). Trusting
these headers gives a caller nothing: `Host` is as much the caller's to choose as they are,
and the MAC still binds the method, path, query, time and body to a key only the client
holds; the host only keeps a request signed for one service from being replayed against
another within the 15 minutes, which pinning `QUEUE_PUBLIC_URL` makes certain.

Credentials a claim issues (`task-client/<taskId>/<runId>/on/<workerGroup>/<workerId>/until/<t>`)
act on that run only while it is running, by that worker, before its `takenUntil`: once it
is resolved or its claim has expired they are refused for it (403), as they are on a queue
that does not hold that run at all. The artifact calls are the exception Taskcluster makes:
a run resolved `exception` takes artifacts for 25 minutes, so its worker's credentials
(valid until `takenUntil`, as Taskcluster's) still create them (a cancelled run's log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

from shared.auth import expressions
from shared.auth.clients import Caller, Directory, Realm, app_realm
from shared.auth.scopes import ScopeSet
from shared.auth.errors import InsufficientScopes
from shared.auth.hawk import SignedRequest, authenticate
from shared.auth.refusals import held, insufficient, shown
from shared.auth.scopes import all_of
from shared.config import Settings
from shared.domain.artifacts import takes_artifacts
from shared.domain.errors import NotFound
from shared.domain.runs import RunState
from shared.domain.timestamps import parse_iso, utcnow
from shared.api.http import ApiRequest
from shared.api.scopes import AFTER_EXCEPTION, Requirement, requirement

_GRACE = " (or, for its artifacts, up to 25 minutes after it resolved exception)"
DEFAULT_PORTS = {"http": 80, "https": 443}
NOBODY = Caller(None, ScopeSet(()))   # the caller of a public endpoint, not looked for
_RUN_CLIENT = re.compile(r"task-client/([^/]+)/([0-9]+)/on/([^/]+)/([^/]+)/until/[^/]+")


@dataclass(frozen=True)
class Access:
    realm: Realm
    public_url: str = ""

    @classmethod
    def from_settings(cls, settings: Settings, directory: Directory | None = None) -> Access:
        """`directory`: the clients and roles the auth service keeps (None: the configured ones only)."""
        return cls(app_realm(settings, directory), settings.public_url)

    def authenticate(self, request: ApiRequest, realm: Realm | None = None) -> Caller:
        """The caller, its credentials checked against `realm` (default: the app's)."""
        raw = urlsplit(request.url)
        host, port = signed_origin(raw.scheme, raw.netloc, request.headers, self.public_url)
        resource = raw.path + (f"?{raw.query}" if raw.query else "")
        return authenticate(SignedRequest(request.method, resource, host, port, request.headers.get("authorization"),
                                          request.body, request.headers.get("content-type", "")), realm or self.realm)

    def guard(self, endpoint: str, request: ApiRequest, params: dict) -> Guard:
        """The call's scope checks, with its caller as far as the endpoint asks: a public one
        (its handler checks what it is given, if anything) authenticates nobody, as
        Taskcluster's do not, and so needs no storage."""
        needed = requirement(endpoint)
        caller = NOBODY if needed is None else self.authenticate(request)
        return Guard(needed, caller, params, lambda: self.realm.anonymous)


def signed_origin(scheme: str, netloc: str, headers: dict, public_url: str = "") -> tuple[str, int]:
    """The host and port the client signed (see the module's docstring)."""
    if public_url:
        public = urlsplit(public_url)
        return public.hostname or "", public.port or DEFAULT_PORTS.get(public.scheme, 80)
    proto = _first(headers.get("x-forwarded-proto")) or scheme or "http"
    try:   # a malformed host or port is the caller's: it only fails to match the signature
        parts = urlsplit("//" + (_first(headers.get("x-forwarded-host")) or headers.get("host") or netloc))
        hostname, explicit = parts.hostname or "", parts.port
    except ValueError:
        hostname, explicit = "", None
    forwarded = _first(headers.get("x-forwarded-port"))
    port = int(forwarded) if forwarded.isdigit() else explicit or DEFAULT_PORTS.get(proto.lower(), 80)
    return hostname, port


def _first(value: str | None) -> str:
    """The first of a comma-separated header's values (the client-facing proxy's)."""
    return (value or "").split(",")[0].strip()


class Guard:
    """The scope checks of one call. `check_url` and `check_request` run before the handler;
    the handler hands `authorize` (the `call.authorize` hook) to the service that loads
    what `stored_scopes` needs, and `require` lets it check the endpoint's scopes again with
    more values (an artifact link's target name)."""

    def __init__(self, needed: Requirement | None, caller: Caller, params: dict,
                 anonymous: Callable[[], Caller] | None = None) -> None:
        self.needed = needed
        self.caller = caller
        self.anonymous = anonymous
        self.params = dict(params)
        self.checked_scopes = False
        bound = _RUN_CLIENT.fullmatch(caller.client_id or "")
        self.bound = bound.groups() if bound else None   # (taskId, runId, workerGroup, workerId)
        self.pending = needed is not None and (needed.stored_scopes is not None or self._bound_here)

    @property
    def _bound_here(self) -> bool:
        """The caller holds credentials for the very run this run-bound endpoint acts on."""
        return bool(self.needed and self.needed.run_bound and self.bound
                    and self.bound[:2] == (self.params.get("taskId"), self.params.get("runId")))

    @property
    def _grace(self) -> bool:
        """Whether the endpoint lets the run's credentials act after an `exception` (artifacts)."""
        return self.needed is not None and self.needed.run_bound == AFTER_EXCEPTION

    def check_url(self) -> None:
        """What the URL's parameters suffice for (Taskcluster checks these before the body)."""
        if self.needed and self.needed.scopes is not None and not self.needed.request \
                and expressions.parameters(self.needed.scopes) <= self.params.keys():
            self._check(expressions.render(self.needed.scopes, self.params))
            self.checked_scopes = True

    def check_request(self, body) -> None:
        if self.needed and self.needed.request:
            self.params.update(self.needed.request(self.params, body))
        if self.needed and self.needed.scopes is not None and not self.checked_scopes:
            self._check(expressions.render(self.needed.scopes, self.params))
            self.checked_scopes = True

    def authorize(self, loaded) -> None:
        """The service's hook: called with the task record, group record or definitions it
        loaded, before it writes anything."""
        needed = self.needed
        if needed is None:
            return
        if needed.stored_scopes is not None:
            values = needed.stored(loaded, self.params)
            if isinstance(values, list):
                self._check(all_of(expressions.render(needed.stored_scopes, {**self.params, **each})
                                   for each in values))
            else:
                self._check(expressions.render(needed.stored_scopes, {**self.params, **values}))
        if self._bound_here:
            self._check_run(loaded)
        self.pending = False

    def require(self, **values) -> None:
        """The endpoint's `scopes` again, with more parameters (Taskcluster's `req.authorize`)."""
        if self.needed and self.needed.scopes is not None:
            self._check(expressions.render(self.needed.scopes, {**self.params, **values}))

    def public(self, expression) -> bool:
        """Whether a caller without credentials would satisfy `expression` (the index's
        redirect to a public artifact needs no signature)."""
        return self.anonymous is not None and self.anonymous().scopes.satisfies(expression)

    def refusal(self, error: Exception) -> Exception:
        """What to answer for `error` raised by the handler: a run this queue does not hold is
        refused to credentials issued for it, as a run no longer theirs is."""
        if isinstance(error, NotFound) and self._bound_here:
            return InsufficientScopes(self._not_theirs("does not exist on this queue"))
        return error

    def _check_run(self, record) -> None:
        task_id, run_id, worker_group, worker_id = self.bound
        run = record.status.run(int(run_id))
        if run is None:
            raise InsufficientScopes(self._not_theirs("does not exist"))
        if (run.worker_group, run.worker_id) != (worker_group, worker_id):
            raise InsufficientScopes(self._not_theirs(f"was claimed by {run.worker_group}/{run.worker_id}"))
        if run.state is not RunState.RUNNING and not (self._grace and takes_artifacts(run, utcnow())):
            raise InsufficientScopes(self._not_theirs(f"is {run.state.value}"))
        if not run.taken_until or parse_iso(run.taken_until) <= utcnow():
            raise InsufficientScopes(self._not_theirs(f"was claimed until {run.taken_until}, which has passed"))

    def _not_theirs(self, why: str) -> str:
        task_id, run_id, worker_group, worker_id = self.bound
        required = expressions.render(self.needed.scopes, self.params)
        return (f"Client ID {self.caller.client_id} holds credentials issued by a claim of run {run_id} of task "
                f"{task_id} for worker {worker_group}/{worker_id}; they satisfy `{shown(required)}` for that run "
                f"only while it is running and claimed by that worker{_GRACE if self._grace else ''}, "
                f"and it {why}.\n\n"
                f"The client has the scopes:\n\n```\n{held(self.caller)}\n```")

    def _check(self, expression) -> None:
        if not self.caller.scopes.satisfies(expression):
            raise InsufficientScopes(insufficient(self.caller, expression))

