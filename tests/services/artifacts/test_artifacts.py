"""Artifacts through the services, on the in-memory account: creation rules, the object
upload they hand out, reads that follow links, listing, and expiry."""

import hashlib
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.domain.artifacts import object_name
from shared.domain.errors import Conflict, Expired, InvalidInput, NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.patterns.keys import blob_name
from tests.conftest import make_task

DATA = b"log line\n" * 50


@pytest.fixture
def running(services, task_queue_id):
    """A task whose run 0 a worker holds; its id."""
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    services.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    return task_id


def expires(hours: float = 1) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def upload_object(services, task_id: str, name: str, data: bytes = DATA, finish: bool = True) -> dict:
    """What a worker does: createArtifact, the object upload by putUrl, finishArtifact."""
    answer = services.artifacts.create(task_id, 0, name, {"storageType": "object", "contentType": "text/plain",
                                                          "expires": expires()})
    upload = {"projectId": answer["projectId"], "uploadId": answer["uploadId"], "expires": answer["expires"]}
    method = services.objects.create_upload(answer["name"], {**upload, "proposedUploadMethods": {
        "putUrl": {"contentType": "text/plain", "contentLength": len(data)}}})["uploadMethod"]["putUrl"]
    services.objects.blobs.upload_to(method["url"], data, method["headers"])
    services.objects.finish_upload(answer["name"], {**upload, "hashes": {
        "sha256": hashlib.sha256(data).hexdigest()}})
    if finish:
        services.artifacts.finish(task_id, 0, name, answer["uploadId"])
    return answer


def test_an_object_artifact_is_served_once_finished(services, running):
    answer = upload_object(services, running, "public/logs/live.log", finish=False)
    assert answer["name"] == f"t/{running}/0/public/logs/live.log" and answer["projectId"] == "none"
    assert set(answer["credentials"]) == {"clientId", "accessToken", "certificate"}
    for read in (services.artifacts.location, services.artifacts.content, services.artifacts.info):
        with pytest.raises(NotFound):
            read(running, 0, "public/logs/live.log")
    services.artifacts.finish(running, 0, "public/logs/live.log", answer["uploadId"])
    services.artifacts.finish(running, 0, "public/logs/live.log", answer["uploadId"])   # again: no error
    location = services.artifacts.location(running, None, "public/logs/live.log")
    assert location["storageType"] == "object" and services.objects.blobs.read_at(location["url"]) == DATA
    content = services.artifacts.content(running, 0, "public/logs/live.log")
    assert content["name"] == answer["name"] and "credentials" in content
    info = services.artifacts.info(running, 0, "public/logs/live.log")
    assert "contentLength" not in info and info["contentType"] == "text/plain"   # the worker reported none
    assert services.artifacts.artifact_table.load(running, 0, "public/logs/live.log").artifact.size == len(DATA)


def test_finishing_needs_the_upload_finished_and_its_upload_id(services, running):
    answer = services.artifacts.create(running, 0, "a.bin", {"storageType": "object", "contentType": "text/plain",
                                                             "expires": expires()})
    with pytest.raises(InvalidInput, match="does not exist or its upload is not finished"):
        services.artifacts.finish(running, 0, "a.bin", answer["uploadId"])
    with pytest.raises(InvalidInput, match="uploadId"):
        services.artifacts.finish(running, 0, "a.bin", new_slugid())
    with pytest.raises(NotFound):
        services.artifacts.finish(running, 0, "no-such.bin", answer["uploadId"])
    services.artifacts.create(running, 0, "ref", {"storageType": "reference", "contentType": "text/plain",
                                                  "url": "https://example.com/", "expires": expires()})
    with pytest.raises(InvalidInput, match="only object artifacts"):
        services.artifacts.finish(running, 0, "ref", answer["uploadId"])


def test_creating_an_object_artifact_again_answers_the_same_upload(services, running):
    body = {"storageType": "object", "contentType": "text/plain", "expires": expires()}
    first = services.artifacts.create(running, 0, "a.bin", body)
    again = services.artifacts.create(running, 0, "a.bin", body)
    assert again["uploadId"] == first["uploadId"] and again["name"] == first["name"]
    with pytest.raises(Conflict):
        services.artifacts.create(running, 0, "a.bin", {**body, "contentType": "text/html"})


def test_the_upload_is_locked_in_on_the_object_service(services, running):
    answer = services.artifacts.create(running, 0, "a.bin", {"storageType": "object", "contentType": "text/plain",
                                                             "expires": expires()})
    with pytest.raises(Conflict):   # someone else's uploadId for the artifact's object
        services.objects.create_upload(answer["name"], {"projectId": "none", "uploadId": new_slugid(),
                                                        "expires": answer["expires"], "proposedUploadMethods": {}})


def test_an_s3_artifact_is_a_staged_block_made_the_blob_when_read(services, running):
    answer = services.artifacts.create(running, 0, "public/old.txt", {"storageType": "s3",
                                                                      "contentType": "text/plain",
                                                                      "expires": expires()})
    assert answer["contentType"] == "text/plain"
    services.objects.blobs.stage_block_at(answer["putUrl"], b"from an old worker")
    location = services.artifacts.location(running, 0, "public/old.txt")
    assert services.objects.blobs.read_at(location["url"]) == b"from an old worker"
    assert services.artifacts.artifact_table.load(running, 0, "public/old.txt").artifact.size == 18


def test_reference_link_and_error(services, running):
    made = {"storageType": "reference", "contentType": "text/html", "url": "https://example.com/a",
            "expires": expires()}
    assert services.artifacts.create(running, 0, "public/ref", made) == {"storageType": "reference"}
    services.artifacts.create(running, 0, "public/err", {"storageType": "error", "reason": "file-missing-on-worker",
                                                         "message": "no such file", "expires": expires()})
    services.artifacts.create(running, 0, "public/link", {"storageType": "link", "artifact": "public/ref",
                                                          "expires": expires()})
    services.artifacts.create(running, 0, "public/to-err", {"storageType": "link", "artifact": "public/err",
                                                            "expires": expires()})
    assert services.artifacts.location(running, 0, "public/link") == {"storageType": "reference",
                                                                      "url": "https://example.com/a"}
    assert services.artifacts.content(running, 0, "public/to-err") == {
        "storageType": "error", "reason": "file-missing-on-worker", "message": "no such file"}
    assert services.artifacts.info(running, 0, "public/link")["storageType"] == "link"   # not followed
    services.artifacts.create(running, 0, "public/ref", {**made, "url": "https://example.com/b"})
    assert services.artifacts.location(running, 0, "public/link")["url"] == "https://example.com/b"


def test_a_link_cycle_is_refused_at_read(services, running):
    for name, target in (("a", "b"), ("b", "c"), ("c", "a"), ("self", "self")):
        services.artifacts.create(running, 0, name, {"storageType": "link", "artifact": target,
                                                     "expires": expires()})
    for name in ("a", "self"):
        with pytest.raises(InvalidInput, match="cycle"):
            services.artifacts.location(running, 0, name)
    services.artifacts.create(running, 0, "dangling", {"storageType": "link", "artifact": "nothing",
                                                       "expires": expires()})
    with pytest.raises(NotFound):
        services.artifacts.content(running, 0, "dangling")


def test_artifacts_are_refused_for_resolved_runs_and_bad_requests(services, running, task_queue_id):
    good = {"storageType": "s3", "contentType": "text/plain", "expires": expires()}
    with pytest.raises(InvalidInput, match="taskId"):
        services.artifacts.create(new_slugid(), 0, "x", good)
    with pytest.raises(InvalidInput, match="runId"):
        services.artifacts.create(running, 1, "x", good)
    with pytest.raises(InvalidInput, match="expires"):
        services.artifacts.create(running, 0, "x", {**good, "expires": to_iso(utcnow() + timedelta(days=400))})
    with pytest.raises(InvalidInput, match="name"):
        services.artifacts.create(running, 0, "x" * 1025, good)
    services.resolutions.completed(running, 0)
    with pytest.raises(Conflict, match="completed"):
        services.artifacts.create(running, 0, "x", good)
    with pytest.raises(NotFound):
        services.artifacts.info(running, 0, "x")


def test_listing_pages_through_a_run_in_name_order(services, running):
    for index in range(7):
        services.artifacts.create(running, 0, f"public/{index}", {"storageType": "reference", "expires": expires(),
                                                                  "contentType": "text/plain",
                                                                  "url": f"https://e.com/{index}"})
    names, after = [], ""
    while after is not None:
        page, after = services.artifacts.list(running, None, after, 3)
        names += [artifact["name"] for artifact in page["artifacts"]]
    assert names == [f"public/{index}" for index in range(7)]
    with pytest.raises(NotFound):
        services.artifacts.list(running, 1, "", 1000)
    with pytest.raises(NotFound):
        services.artifacts.list(new_slugid(), None, "", 1000)


def test_an_expired_artifact_is_410_then_deleted_with_its_blob(services, running):
    answer = upload_object(services, running, "public/a.txt")
    services.artifacts.create(running, 0, "public/s3.txt", {"storageType": "s3", "contentType": "text/plain",
                                                            "expires": expires()})
    s3_blob = blob_name(object_name(running, 0, "public/s3.txt"))
    services.objects.blobs.stage_block_at(services.artifacts.blobs.block_upload_url(s3_blob, utcnow() + timedelta(
        minutes=5)), b"s3")
    services.artifacts.location(running, 0, "public/s3.txt")
    later = utcnow() + timedelta(hours=1, minutes=1)
    with pytest.raises(Expired):
        services.artifacts.location(running, 0, "public/a.txt", now=later)
    assert services.artifact_expiry.sweep(now=later) == 3   # two artifacts and the object artifact's object
    for name in ("public/a.txt", "public/s3.txt"):
        assert services.artifacts.artifact_table.load(running, 0, name) is None
    assert services.objects.blobs.read(blob_name(answer["name"])) is None and services.objects.blobs.read(
        s3_blob) is None


def test_an_extended_expiry_is_indexed_again(services, running):
    body = {"storageType": "reference", "contentType": "text/plain", "url": "https://e.com", "expires": expires()}
    services.artifacts.create(running, 0, "ref", body)
    services.artifacts.create(running, 0, "ref", {**body, "expires": expires(3)})
    services.artifact_expiry.sweep(now=utcnow() + timedelta(hours=2))
    assert services.artifacts.artifact_table.load(running, 0, "ref") is not None
    services.artifact_expiry.sweep(now=utcnow() + timedelta(hours=4))
    assert services.artifacts.artifact_table.load(running, 0, "ref") is None


def test_a_run_resolved_exception_takes_its_log_for_a_while(services, running):
    services.resolutions.exception(running, 0, "malformed-payload")
    services.artifacts.create(running, 0, "public/logs/live.log", {"storageType": "s3", "contentType": "text/plain",
                                                                   "expires": expires()})
    record = services.task_calls.task_table.load(running)
    late = replace(record.status.run(0), resolved=to_iso(utcnow() - timedelta(minutes=30)))
    services.task_calls.task_table.save_status(record, record.status.with_runs(late))
    with pytest.raises(Conflict):
        services.artifacts.create(running, 0, "public/other.log", {"storageType": "s3", "contentType": "text/plain",
                                                                   "expires": expires()})


def test_creating_again_after_the_upload_finished_still_answers_the_same_upload(services, running):
    first = upload_object(services, running, "public/a.txt", finish=False)   # finishUpload done, not finishArtifact
    again = services.artifacts.create(running, 0, "public/a.txt", {"storageType": "object",
                                                                    "contentType": "text/plain",
                                                                    "expires": first["expires"]})
    assert again["uploadId"] == first["uploadId"]
    services.artifacts.finish(running, 0, "public/a.txt", first["uploadId"])
    assert services.artifacts.create(running, 0, "public/a.txt", {"storageType": "object", "contentType": "text/plain",
                                                                  "expires": first["expires"]})["uploadId"] == \
        first["uploadId"]


def test_an_s3_artifact_larger_than_one_block_is_refused(services, running):
    with pytest.raises(InvalidInput, match="contentLength"):
        services.artifacts.create(running, 0, "big.iso", {"storageType": "s3", "contentType": "application/x-iso",
                                                          "contentLength": 5000 * 1024 * 1024, "expires": expires()})
    assert services.artifacts.artifact_table.load(running, 0, "big.iso") is None


def created_events(services, task_id: str) -> list[tuple[str, str]]:
    return [(event.body["artifact"]["name"], event.body["artifact"]["storageType"])
            for event in services.bus.published
            if event.exchange == "artifact-created" and event.body["status"]["taskId"] == task_id]


def test_artifact_created_is_announced_once_the_artifact_is_present(services, running):
    upload_object(services, running, "public/build.tar", finish=False)
    assert created_events(services, running) == []                       # not served yet: not announced
    services.artifacts.finish(running, 0, "public/build.tar",
                              services.artifacts.artifact_table.load(running, 0, "public/build.tar").artifact.details["uploadId"])
    reference = {"storageType": "reference", "url": "https://example.com/a", "contentType": "text/html",
                 "expires": expires()}
    services.artifacts.create(running, 0, "public/page", reference)
    services.artifacts.create(running, 0, "public/page", reference)        # the same again: nothing new
    services.artifacts.create(running, 0, "public/page", {**reference, "url": "https://example.com/b"})
    services.artifacts.create(running, 0, "public/old.zip", {"storageType": "s3", "contentType": "application/zip",
                                                            "expires": expires()})
    assert created_events(services, running) == [("public/build.tar", "object"), ("public/page", "reference"),
                                                  ("public/page", "reference")]
    event = next(event for event in services.bus.published if event.exchange == "artifact-created")
    assert (event.body["runId"], event.body["workerGroup"], event.body["workerId"]) == (0, "wg", "w1")
    assert event.routing_key.split(".")[1:5] == [running, "0", "wg", "w1"]
    held = services.artifacts.artifact_table.load_outbox(services.artifacts.artifact_table.load(running, 0, "public/page").key)[0]
    assert services.event_publisher.marks.unknown(held) == []   # all known to be out
