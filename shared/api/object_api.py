"""The object service (`/api/object/v1/...`), declared as data: Taskcluster's names and routes.

Served by the same Function App as the Queue, so `taskcluster.Object({"rootUrl": ...})`
and the upload and download helpers reach it at the Queue's root URL.
"""

from __future__ import annotations

from shared.api.http import ApiResponse
from shared.api.router import Endpoint
from shared.api.service_calls import service_calls

SERVICE_ROOT = "/object/v1"


def _download(call) -> ApiResponse:
    url = call.services.objects.simple_download(call.params["name"])
    return ApiResponse(303, {"method": "simple", "url": url}, {"Location": url})


ENDPOINTS = [
    *service_calls("Object service", SERVICE_ROOT, lambda: ENDPOINTS),
    Endpoint("createUpload", "PUT", "/upload/<name>",
             lambda call: call.services.objects.create_upload(call.params["name"], call.body),
             input_schema="create-upload-request", output_schema="create-upload-response"),
    Endpoint("finishUpload", "POST", "/finish-upload/<name>",
             lambda call: call.services.objects.finish_upload(call.params["name"], call.body),
             input_schema="finish-upload-request"),
    Endpoint("startDownload", "PUT", "/start-download/<name>",
             lambda call: call.services.objects.start_download(call.params["name"], call.body),
             input_schema="download-object-request", output_schema="download-object-response"),
    Endpoint("object", "GET", "/metadata/<name>",
             lambda call: call.services.objects.metadata(call.params["name"]),
             output_schema="get-object-response"),
    Endpoint("download", "GET", "/download/<name>", _download, output_schema="download-object-response",
             status=303),
]
