"""The object service's rules: an upload fixed by its first call, bytes inline or by a
signed PUT, finished once, hashes that never change, downloads only of finished objects."""

import base64
import hashlib
from datetime import timedelta

import pytest

from shared.domain.errors import Conflict, InvalidInput, NoMatchingMethod, NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.patterns.keys import blob_name

NAME = "t/task/0/public/thing.bin"
DATA = b"some bytes " * 100
HASHES = {"sha256": hashlib.sha256(DATA).hexdigest(), "sha512": hashlib.sha512(DATA).hexdigest()}


@pytest.fixture
def objects(services):
    return services.objects


@pytest.fixture
def upload():
    return {"projectId": "proj", "uploadId": new_slugid(), "expires": to_iso(utcnow() + timedelta(days=1))}


def put_url(objects, name, upload, data=DATA):
    answer = objects.create_upload(name, {**upload, "proposedUploadMethods": {
        "putUrl": {"contentType": "application/octet-stream", "contentLength": len(data)}}})
    method = answer["uploadMethod"]["putUrl"]
    objects.blobs.upload_to(method["url"], data, method["headers"])
    return answer


def finish(objects, name, upload, **hashes):
    return objects.finish_upload(name, {"projectId": upload["projectId"], "uploadId": upload["uploadId"],
                                        "hashes": hashes or HASHES})


def test_a_put_url_upload_then_finish_then_download(objects, upload):
    answer = put_url(objects, NAME, upload)
    assert answer["uploadId"] == upload["uploadId"] and answer["projectId"] == "proj"
    assert answer["uploadMethod"]["putUrl"]["headers"]["Content-Length"] == str(len(DATA))
    with pytest.raises(NotFound):
        objects.start_download(NAME, {"acceptDownloadMethods": {"getUrl": True}})   # not finished yet
    assert finish(objects, NAME, upload) == {}
    download = objects.start_download(NAME, {"acceptDownloadMethods": {"getUrl": True, "simple": True}})
    assert download["method"] == "getUrl" and download["hashes"] == HASHES
    assert objects.blobs.read_at(download["url"]) == DATA
    simple = objects.start_download(NAME, {"acceptDownloadMethods": {"simple": True}})
    assert set(simple) == {"method", "url"} and objects.blobs.read_at(simple["url"]) == DATA
    assert objects.metadata(NAME) == {"projectId": "proj", "expires": upload["expires"], "hashes": HASHES}


def test_inline_data_is_stored_at_once_with_its_hashes(objects, upload):
    encoded = base64.b64encode(DATA).decode()
    answer = objects.create_upload(NAME, {**upload, "proposedUploadMethods": {
        "dataInline": {"contentType": "text/plain", "objectData": encoded},
        "putUrl": {"contentType": "text/plain", "contentLength": len(DATA)}}})
    assert answer["uploadMethod"] == {"dataInline": True}
    finish(objects, NAME, upload)
    assert objects.metadata(NAME)["hashes"] == HASHES and objects.blobs.read(blob_name(NAME)) == DATA


def test_inline_data_whose_hashes_disagree_is_refused_and_nothing_stored(objects, upload):
    with pytest.raises(InvalidInput, match="hashes.sha256"):
        objects.create_upload(NAME, {**upload, "hashes": {"sha256": "0" * 64}, "proposedUploadMethods": {
            "dataInline": {"contentType": "text/plain", "objectData": base64.b64encode(DATA).decode()}}})
    with pytest.raises(InvalidInput, match="objectData"):
        objects.create_upload(NAME, {**upload, "proposedUploadMethods": {
            "dataInline": {"contentType": "text/plain", "objectData": "not base64!"}}})
    assert objects.object_table.load(NAME) is None and objects.blobs.read(blob_name(NAME)) is None


def test_the_first_call_fixes_the_upload(objects, upload):
    objects.create_upload(NAME, {**upload, "proposedUploadMethods": {}})
    assert put_url(objects, NAME, upload)["uploadId"] == upload["uploadId"]    # the same again: fine
    for change in ({"uploadId": new_slugid()}, {"projectId": "other"},
                   {"expires": to_iso(utcnow() + timedelta(days=2))}):
        with pytest.raises(Conflict):
            objects.create_upload(NAME, {**upload, **change, "proposedUploadMethods": {}})
    finish(objects, NAME, upload)
    with pytest.raises(Conflict):
        objects.create_upload(NAME, {**upload, "proposedUploadMethods": {}})    # finished: immutable


def test_hashes_once_given_never_change(objects, upload):
    objects.create_upload(NAME, {**upload, "hashes": {"sha256": HASHES["sha256"]}, "proposedUploadMethods": {}})
    put_url(objects, NAME, upload)
    with pytest.raises(Conflict, match="sha256"):
        finish(objects, NAME, upload, sha256="f" * 64)
    finish(objects, NAME, upload)
    finish(objects, NAME, upload)                                                # repeating it is fine
    with pytest.raises(Conflict, match="sha256"):
        finish(objects, NAME, upload, sha256="f" * 64)
    with pytest.raises(Conflict, match="md5"):
        finish(objects, NAME, upload, md5="abc")                                 # nor a new one afterwards


def test_finishing_needs_the_data_the_right_upload_and_project(objects, upload):
    objects.create_upload(NAME, {**upload, "proposedUploadMethods": {
        "putUrl": {"contentType": "text/plain", "contentLength": len(DATA)}}})
    with pytest.raises(Conflict, match="none of its data"):
        finish(objects, NAME, upload)
    objects.blobs.put(blob_name(NAME), DATA[:10], "text/plain")
    with pytest.raises(Conflict, match="10 bytes"):
        finish(objects, NAME, upload)
    with pytest.raises(Conflict, match="uploadId"):
        finish(objects, NAME, {**upload, "uploadId": new_slugid()})
    with pytest.raises(InvalidInput, match="projectId"):
        finish(objects, NAME, {**upload, "projectId": "other"})
    with pytest.raises(NotFound):
        finish(objects, "t/no/such/object", upload)


def test_a_put_larger_than_one_put_takes_is_refused(objects, upload):
    with pytest.raises(InvalidInput, match="contentLength"):
        objects.create_upload(NAME, {**upload, "proposedUploadMethods": {
            "putUrl": {"contentType": "text/plain", "contentLength": 6000 * 1024 * 1024}}})
    assert objects.object_table.load(NAME) is None


def test_no_common_download_method_is_406(objects, upload):
    put_url(objects, NAME, upload)
    finish(objects, NAME, upload)
    with pytest.raises(NoMatchingMethod):
        objects.start_download(NAME, {"acceptDownloadMethods": {}})


def test_an_expired_object_is_deleted_with_its_blob(services, objects, upload):
    put_url(objects, NAME, upload)
    finish(objects, NAME, upload)
    services.artifact_expiry.sweep(now=utcnow() + timedelta(hours=23))
    assert objects.finished(NAME) is not None
    assert services.artifact_expiry.sweep(now=utcnow() + timedelta(days=1, minutes=1)) == 1
    assert objects.object_table.load(NAME) is None and objects.blobs.read(blob_name(NAME)) is None
