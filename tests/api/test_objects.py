"""The object service through `taskcluster.Object` and the official helpers, on its own."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
import taskcluster
from taskcluster import download, upload

from shared.domain.timestamps import to_iso, utcnow
from shared.validation import check_response
from tests.api.test_errors import rest_error


@pytest.fixture
def objects(server) -> taskcluster.Object:
    return taskcluster.Object({"rootUrl": server.root_url, "maxRetries": 0, "credentials": server.credentials})


def name() -> str:
    return f"projects/tests/{taskcluster.slugId()}/data.bin"


def test_the_monitoring_calls_answer(objects):
    assert objects.ping()["alive"] is True and objects.heartbeat() == {}


@pytest.mark.parametrize("size", [0, 100, 9000])   # inline, inline, by PUT
def test_upload_and_download_with_the_helpers(objects, size):
    data, object_name = bytes(range(256)) * (size // 256) + b"x" * (size % 256), name()
    upload.uploadFromBuf(projectId="tests", name=object_name, contentType="application/x-test", contentLength=size,
                         expires=taskcluster.fromNow("1 hour"), objectService=objects, data=data)
    downloaded, content_type = download.downloadToBuf(name=object_name, objectService=objects)
    assert bytes(downloaded) == data and content_type == "application/x-test"
    metadata = objects.object(object_name)
    assert check_response("get-object-response", metadata) == [] and metadata["projectId"] == "tests"


def test_start_download_chooses_a_method_and_download_redirects(server, objects):
    object_name = name()
    upload.uploadFromBuf(projectId="tests", name=object_name, contentType="text/plain", contentLength=2,
                         expires=taskcluster.fromNow("1 hour"), objectService=objects, data=b"hi")
    simple = objects.startDownload(object_name, {"acceptDownloadMethods": {"simple": True}})
    assert check_response("download-object-response", simple) == [] and requests.get(simple["url"]).content == b"hi"
    error = rest_error(objects.startDownload, object_name, {"acceptDownloadMethods": {}})
    assert error.status_code == 406 and error.body["code"] == "NoMatchingMethod"
    answer = requests.get(f"{server.root_url}/api/object/v1/download/{object_name}", allow_redirects=False,
                          auth=server.auth)
    assert answer.status_code == 303 and requests.get(answer.headers["Location"]).content == b"hi"


def test_an_unfinished_object_is_not_served_and_bad_requests_are_400(objects):
    object_name = name()
    upload_id = taskcluster.slugId()
    answer = objects.createUpload(object_name, {"projectId": "tests", "uploadId": upload_id,
                                                "expires": to_iso(utcnow() + timedelta(hours=1)),
                                                "proposedUploadMethods": {"putUrl": {"contentType": "text/plain",
                                                                                     "contentLength": 3}}})
    assert check_response("create-upload-response", answer) == []
    assert rest_error(objects.object, object_name).status_code == 404
    assert rest_error(objects.startDownload, object_name, {"acceptDownloadMethods": {"getUrl": True}}) \
        .status_code == 404
    error = rest_error(objects.finishUpload, object_name, {"projectId": "tests", "uploadId": upload_id})
    assert error.status_code == 409 and "uploaded" in error.body["message"]
    for body, field in (({"expires": "soon"}, "expires"), ({"projectId": "a:b"}, "projectId"),
                        ({"proposedUploadMethods": {"putUrl": {"contentType": "x", "contentLength": 1}}},
                         "contentType"),
                        ({"hashes": {"sha256": "nope"}}, "sha256")):
        request = {"projectId": "tests", "uploadId": taskcluster.slugId(), "expires": to_iso(utcnow() + timedelta(
            hours=1)), "proposedUploadMethods": {}, **body}
        error = rest_error(objects.createUpload, name(), request)
        assert error.status_code == 400 and field in error.body["message"], error.body
