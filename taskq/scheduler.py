"""A client of the task-graph scheduler (`/api/scheduler/v1/`), made by the official library
from the endpoints declared here, so it signs, retries and reports errors as the Queue client does."""

from __future__ import annotations

from taskcluster.client import createApiClient


def _entry(name: str, method: str, route: str, args: list[str], takes_input: bool = False) -> dict:
    entry = {"type": "function", "name": name, "method": method, "route": route, "args": args,
             "stability": "experimental", "query": []}
    if takes_input:
        entry["input"] = f"v1/{name}.json#"
    return entry


Scheduler = createApiClient("Scheduler", {"reference": {
    "serviceName": "scheduler", "apiVersion": "v1",
    "entries": [
        _entry("createTaskGraph", "put", "/task-graph/<taskGraphId>", ["taskGraphId"], takes_input=True),
        _entry("getTaskGraphStatus", "get", "/task-graph/<taskGraphId>/status", ["taskGraphId"]),
        _entry("inspectTaskGraph", "get", "/task-graph/<taskGraphId>/inspect", ["taskGraphId"]),
        _entry("extendTaskGraph", "post", "/task-graph/<taskGraphId>/extend", ["taskGraphId"], takes_input=True),
        _entry("taskGroupWatchdog", "get", "/task-group/<taskGroupId>/watchdog", ["taskGroupId"]),
        _entry("setTaskGroupWatchdog", "put", "/task-group/<taskGroupId>/watchdog", ["taskGroupId"], takes_input=True),
    ],
}})
