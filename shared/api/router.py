"""Endpoints declared as data, and matching a raw path against them.

Routes use Taskcluster's notation (`/task/<taskId>/runs/<runId>/claim`). A path is matched
on its raw segments, and each parameter is percent-decoded only once it is bound, so
`proj%2Flinux` stays inside one parameter and becomes the value `proj/linux`.

A parameter Taskcluster's route declares as a wildcard (`/workers/{*workerPoolId}`,
`/task-queues/{*taskQueueId}/counts`) takes one or more segments, wherever it stands, so its
slashes may also arrive as they are (`/pending/proj/linux`); every other parameter takes one
segment. A route ending in `<name>` (an artifact's or an object's) always gives it the rest
of the path, so `public/logs/live.log` arrives whole whether a client sent its slashes as
`%2F` (as Taskcluster's clients do) or as they are (as a browser following a link does).
Endpoints are tried in the order they are declared, as Taskcluster's router tries them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable
from urllib.parse import unquote

from shared.domain.ids import SLUGID_PATTERN
from shared.domain.index import NAMESPACE_PATTERN
from shared.validation import ecma_regex
from shared.api.errors import InvalidRequestArguments

PARAM_PATTERNS = {
    "taskId": SLUGID_PATTERN,
    "taskGroupId": SLUGID_PATTERN,
    "taskGraphId": SLUGID_PATTERN,
    "runId": r"^[0-9]{1,4}$",
    "taskQueueId": r"^[a-zA-Z0-9-_]{1,38}/[a-z]([-a-z0-9]{0,36}[a-z0-9])?$",
    "workerPoolId": r"^[a-zA-Z0-9-_]{1,38}/[a-z]([-a-z0-9]{0,36}[a-z0-9])?$",
    "provisionerId": r"^[a-zA-Z0-9-_]{1,38}$",
    "workerType": r"^[a-z]([-a-z0-9]{0,36}[a-z0-9])?$",
    "workerGroup": r"^([a-zA-Z0-9-_]{1,38})$",
    "workerId": r"^([a-zA-Z0-9-_]{1,38})$",
    # Printable ASCII, as Taskcluster's object names; artifact names are held to 1,024 by
    # their own rules, object names (`t/<taskId>/<runId>/<artifact name>`) may be longer.
    "name": r"^[\x20-\x7e]{1,2048}$",
    # An index path (namespace), Taskcluster's format; the root is the route without it.
    "indexPath": NAMESPACE_PATTERN,
    "namespace": NAMESPACE_PATTERN,
    # A feed of the browser view: 16 random bytes, URL-safe base64 (services/task_groups/group_feeds.py).
    "feedId": r"^[A-Za-z0-9_-]{22}$",
    # Taskcluster's hooks service's (a hookId may hold '/', sent as %2F).
    "hookGroupId": r"^[a-zA-Z0-9-_]{1,1000}$",
    "hookId": r"^[a-zA-Z0-9-_/]{1,1000}$",
    # The auth service's: Taskcluster's clientId pattern, and any printable ASCII for a role.
    "clientId": r"^[A-Za-z0-9!@/:.+|_-]+$",
    "roleId": r"^[\x20-\x7e]+$",
    # getEntityHistory's: Taskcluster's entityType pattern; an entityId, as every id of those
    # entities (a role's, a secret's name), printable ASCII (Taskcluster sets none).
    "entityType": r"^(client|role|secret|hook|worker-pool)$",
    "entityId": r"^[\x20-\x7e]+$",
    # A trigger token: one that is not the hook's is refused as such (401), whatever it holds.
    "token": r"^[\x20-\x7e]{1,1000}$",
}
# A final parameter that takes every segment left, whatever the route declares.
REST_OF_PATH = "<name>"


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    route: str
    handler: Callable                    # answers a body (a 200), or an ApiResponse of its own
    input_schema: str | None = None
    query: tuple[str, ...] = ()
    output_schema: str | None = None     # what a success carries (documentation and tests)
    status: int = 200                    # the success status: 303 for the redirecting calls
    # Body fields never shown: "(OMITTED)" in an error's requestInfo (Taskcluster's
    # cleanPayload), and a schema violation in them named without the value (a secret's).
    hidden: tuple[str, ...] = ()
    # The parameter Taskcluster's route declares `{*...}` (see the module's docstring).
    wildcard: str | None = None
    # The name its scopes are listed under in `scopes.py`, where two services share a method's
    # name (the queue's and the worker manager's `listWorkers`); the endpoint's name otherwise.
    scoped_as: str | None = None

    @property
    def scopes_key(self) -> str:
        return self.scoped_as or self.name

    # Derived from the route once (every request tries each endpoint of its method in turn).
    @cached_property
    def spread(self) -> int | None:
        """The index of the segment that may take several, if any."""
        if self.wildcard:
            return self.segments.index(f"<{self.wildcard}>")
        return len(self.segments) - 1 if self.segments[-1] == REST_OF_PATH else None

    @property
    def params(self) -> list[str]:
        return [segment[1:-1] for segment in self.segments if _is_param(segment)]

    @cached_property
    def segments(self) -> list[str]:
        return self.route.strip("/").split("/")


def match(endpoints: list[Endpoint], method: str, raw_path: str) -> tuple[Endpoint, dict] | None:
    """The endpoint for this method and path, with its decoded parameters."""
    raw_segments = raw_path.strip("/").split("/")
    for endpoint in endpoints:
        if endpoint.method != method:
            continue
        params = _bind(endpoint.segments, _spread(raw_segments, endpoint.spread, len(endpoint.segments)))
        if params is not None:
            return endpoint, params
    return None


def _spread(raw: list[str], at: int | None, wanted: int) -> list[str]:
    """The raw segments with those the segment `at` takes joined into one (still encoded)."""
    taken = len(raw) - wanted + 1
    if at is None or taken <= 1:
        return raw
    return raw[:at] + ["/".join(raw[at:at + taken])] + raw[at + taken:]


def _bind(template: list[str], raw: list[str]) -> dict | None:
    if len(template) != len(raw):
        return None
    params = {}
    for pattern, value in zip(template, raw):
        if _is_param(pattern):
            params[pattern[1:-1]] = unquote(value)
        elif pattern != unquote(value):
            return None
    return params


def _is_param(segment: str) -> bool:
    return segment.startswith("<") and segment.endswith(">")


# What an id is, in words, where its pattern would tell a person little.
_SLUGID_WORDS = ("a slugid: 22 characters of letters, digits, '-' and '_', as taskcluster.slugId() makes "
                 "(pattern {pattern})")
PARAM_WORDS = {"taskId": _SLUGID_WORDS, "taskGroupId": _SLUGID_WORDS, "taskGraphId": _SLUGID_WORDS,
               "runId": "a run number: 0 for a task's first run, then 1, 2, ..."}


def check_params(params: dict) -> None:
    for name, value in params.items():
        pattern = PARAM_PATTERNS.get(name)
        # Read as the schemas are (ECMA-262): `$` ends the value, even one ending in "\n".
        if pattern and not ecma_regex(pattern).search(value):
            words = PARAM_WORDS.get(name)
            raise InvalidRequestArguments(f"{name}: {value!r} is not {words.format(pattern=pattern)}" if words
                                          else f"{name}: {value!r} does not match {pattern}")
