"""What every service answers besides its own calls: Taskcluster's `ping`, the Dockerflow
endpoints (`lbheartbeat`, `version`, `heartbeat`) and its OpenAPI document, made from the
same declaration that routes and checks its calls."""

from __future__ import annotations

import os
import time
from typing import Callable

from shared import __version__
from shared.api import openapi
from shared.api.dispatch import Call
from shared.api.router import Endpoint

_STARTED = time.monotonic()


def _ping(call: Call) -> dict:
    return {"alive": True, "uptime": round(time.monotonic() - _STARTED, 3)}


def _version(call: Call) -> dict:
    """Dockerflow's version object; COMMIT_SHA is set by whoever builds the deployment."""
    return {"source": "taskcluster-compatible-queue", "version": __version__,
            "commit": os.environ.get("COMMIT_SHA", "unknown"), "build": ""}


def service_calls(title: str, service_root: str, endpoints: Callable[[], list[Endpoint]]) -> list[Endpoint]:
    """The service's own endpoints; `endpoints()` gives all of its endpoints, for the OpenAPI
    document (read when it is asked for, since the list that holds these is not made yet)."""
    return [
        Endpoint("ping", "GET", "/ping", _ping),
        Endpoint("lbheartbeat", "GET", "/__lbheartbeat__", lambda call: {}),
        Endpoint("version", "GET", "/__version__", _version),
        Endpoint("heartbeat", "GET", "/__heartbeat__", lambda call: {}),
        Endpoint("openapi", "GET", "/openapi.json", lambda call: openapi.document(endpoints(), service_root, title)),
    ]
