"""The Queue's artifact calls (`/api/queue/v1/task/.../artifacts...`), declared as data.

Artifact names may contain `/`: the route's final `<name>` takes the rest of the path.
`getArtifact` and `getLatestArtifact` answer 303 to where the content is (its body says
the same), or 424 with an error artifact's `reason` and `message`, as Taskcluster does.
"""

from __future__ import annotations

from shared.api.dispatch import Call
from shared.api.paging import paged
from shared.api.http import ApiResponse
from shared.api.router import Endpoint

RUN = "/task/<taskId>/runs/<runId>"
LATEST = "/task/<taskId>"
STORAGE_TYPE_HEADER = "x-taskcluster-artifact-storage-type"


def _run_id(call: Call) -> int | None:
    """The call's run, or None for the latest run (the `latest...` calls)."""
    return int(call.params["runId"]) if "runId" in call.params else None


def _redirect(call: Call) -> ApiResponse:
    found = call.services.artifacts.location(call.params["taskId"], _run_id(call), call.params["name"],
                                             require=call.require)
    headers = {STORAGE_TYPE_HEADER: found["storageType"]}
    if found["storageType"] == "error":
        return ApiResponse(424, {"reason": found["reason"], "message": found["message"]}, headers)
    return ApiResponse(303, found, {**headers, "Location": found["url"]})


def _finish(call: Call) -> ApiResponse:
    call.services.artifacts.finish(call.params["taskId"], _run_id(call), call.params["name"], call.body["uploadId"],
                                   call.authorize)
    return ApiResponse(204)


def _read(method: str):
    """A handler calling `Artifacts.<method>(taskId, runId or None, name)`."""
    return lambda call: getattr(call.services.artifacts, method)(call.params["taskId"], _run_id(call),
                                                                  call.params["name"], **_links_checked(method, call))


def _links_checked(method: str, call: Call) -> dict:
    """The reads that follow links check each name they lead to (`content`; `info` does not follow)."""
    return {"require": call.require} if method == "content" else {}


def _list(call: Call) -> dict:
    return paged(call.query, lambda after, limit: call.services.artifacts.list(call.params["taskId"], _run_id(call),
                                                                               after, limit))


ENDPOINTS = [
    Endpoint("createArtifact", "POST", RUN + "/artifacts/<name>",
             lambda call: call.services.artifacts.create(call.params["taskId"], _run_id(call), call.params["name"],
                                                         call.body, authorize=call.authorize),
             input_schema="post-artifact-request", output_schema="post-artifact-response"),
    Endpoint("finishArtifact", "PUT", RUN + "/artifacts/<name>", _finish,
             input_schema="finish-artifact-request", status=204),
    Endpoint("getArtifact", "GET", RUN + "/artifacts/<name>", _redirect,
             output_schema="get-artifact-response", status=303),
    Endpoint("getLatestArtifact", "GET", LATEST + "/artifacts/<name>", _redirect,
             output_schema="get-artifact-response", status=303),
    Endpoint("artifact", "GET", RUN + "/artifact-content/<name>", _read("content"),
             output_schema="artifact-content-response"),
    Endpoint("latestArtifact", "GET", LATEST + "/artifact-content/<name>", _read("content"),
             output_schema="artifact-content-response"),
    Endpoint("artifactInfo", "GET", RUN + "/artifact-info/<name>", _read("info"),
             output_schema="artifact-response"),
    Endpoint("latestArtifactInfo", "GET", LATEST + "/artifact-info/<name>", _read("info"),
             output_schema="artifact-response"),
    Endpoint("listArtifacts", "GET", RUN + "/artifacts", _list,
             query=("continuationToken", "limit"), output_schema="list-artifacts-response"),
    Endpoint("listLatestArtifacts", "GET", LATEST + "/artifacts", _list,
             query=("continuationToken", "limit"), output_schema="list-artifacts-response"),
]
