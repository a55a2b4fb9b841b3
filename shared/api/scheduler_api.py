"""The task-graph scheduler API (`/api/scheduler/v1/...`), declared as data."""

from __future__ import annotations

from shared.api import openapi
from shared.api.queue_api import ENDPOINTS as QUEUE_ENDPOINTS
from shared.api.router import Endpoint

SERVICE_ROOT = "/scheduler/v1"

ENDPOINTS = [
    next(endpoint for endpoint in QUEUE_ENDPOINTS if endpoint.name == "ping"),
    Endpoint("openapi", "GET", "/openapi.json",
             lambda call: openapi.document(ENDPOINTS, SERVICE_ROOT, "Task-graph scheduler")),
    Endpoint("createTaskGraph", "PUT", "/task-graph/<taskGraphId>",
             lambda call: call.services.task_graphs.create(call.params["taskGraphId"], call.body, call.authorize),
             input_schema="task-graph-request"),
    Endpoint("getTaskGraphStatus", "GET", "/task-graph/<taskGraphId>/status",
             lambda call: call.services.task_graphs.status(call.params["taskGraphId"])),
    Endpoint("inspectTaskGraph", "GET", "/task-graph/<taskGraphId>/inspect",
             lambda call: call.services.task_graphs.inspect(call.params["taskGraphId"])),
    Endpoint("extendTaskGraph", "POST", "/task-graph/<taskGraphId>/extend",
             lambda call: call.services.task_graphs.extend(call.params["taskGraphId"], call.body, call.authorize),
             input_schema="task-graph-extension"),
]

