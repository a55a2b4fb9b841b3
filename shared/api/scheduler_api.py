"""The task-graph scheduler API (`/api/scheduler/v1/...`), declared as data."""

from __future__ import annotations

from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/scheduler/v1"

ENDPOINTS = [
    *service_calls("Task-graph scheduler", SERVICE_ROOT, lambda: ENDPOINTS),
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
    # The watchdog's view of any task group (a graph's or not), and what it does once the
    # group is stalled (docs/watchdog.md): seed 003's invariant is the scheduler's.
    Endpoint("taskGroupWatchdog", "GET", "/task-group/<taskGroupId>/watchdog",
             lambda call: call.services.stall_reports.view(call.params["taskGroupId"]),
             output_schema="task-group-watchdog-response"),
    Endpoint("setTaskGroupWatchdog", "PUT", "/task-group/<taskGroupId>/watchdog",
             lambda call: call.services.stall_reports.set_on_stall(call.params["taskGroupId"], call.body["onStall"],
                                                                  call.authorize),
             input_schema="task-group-watchdog-request", output_schema="task-group-watchdog-response"),
]

