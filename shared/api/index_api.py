"""The index service's API (`/api/index/v1/...`), declared as data: Taskcluster's names and routes.

Served by the same Function App as the Queue, so `taskcluster.Index({"rootUrl": ...})` works
at the Queue's root URL. listNamespaces and listTasks take the namespace as an optional last
segment, as Taskcluster's `/namespaces{/:namespace}` does (`/namespaces/` is the root): each
is declared at both routes, under one name.
"""

from __future__ import annotations

from functools import partial

from shared.api.dispatch import Call
from shared.api.http import ApiResponse
from shared.api.paging import paged
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/index/v1"
PAGED = ("continuationToken", "limit")


def _namespace(call: Call) -> str:
    return call.params.get("namespace", "")


def _list(method: str):
    """A listing handler: `Index.<method>(namespace, after, limit)`, paged."""
    return lambda call: paged(call.query, partial(getattr(call.services.index, method), _namespace(call)))


def _artifact(call: Call) -> ApiResponse:
    url = call.services.index.artifact_url(call.params["indexPath"], call.params["name"],
                                           lambda name: call.guard.public(f"queue:get-artifact:{name}"))
    return ApiResponse(303, {"url": url}, {"Location": url})


ENDPOINTS = [
    *service_calls("Index service", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("findTask", "GET", "/task/<indexPath>",
             lambda call: call.services.index.find(call.params["indexPath"]),
             output_schema="index/indexed-task-response"),
    Endpoint("findTasksAtIndex", "POST", "/tasks/indexes",
             lambda call: paged(call.query, partial(call.services.index.find_many, call.body.get("indexes", []))),
             input_schema="index/list-tasks-at-index", query=PAGED, output_schema="index/list-tasks-response"),
    Endpoint("listNamespaces", "GET", "/namespaces/<namespace>", _list("namespaces"), query=PAGED,
             output_schema="index/list-namespaces-response"),
    Endpoint("listNamespaces", "GET", "/namespaces", _list("namespaces"), query=PAGED,
             output_schema="index/list-namespaces-response"),
    Endpoint("listTasks", "GET", "/tasks/<namespace>", _list("tasks"), query=PAGED,
             output_schema="index/list-tasks-response"),
    Endpoint("listTasks", "GET", "/tasks", _list("tasks"), query=PAGED, output_schema="index/list-tasks-response"),
    Endpoint("insertTask", "PUT", "/task/<namespace>",
             lambda call: call.services.index.insert(call.params["namespace"], call.body),
             input_schema="index/insert-task-request", output_schema="index/indexed-task-response"),
    Endpoint("deleteTask", "DELETE", "/task/<namespace>",
             lambda call: call.services.index.delete(call.params["namespace"])),
    Endpoint("findArtifactFromTask", "GET", "/task/<indexPath>/artifacts/<name>", _artifact, status=303),
]
