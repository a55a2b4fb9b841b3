"""Artifacts through the official Taskcluster client and its upload and download helpers,
against the real local host and Azurite's Blob service: every storage type, the rules of
creating them, and what reads answer."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest
import requests
import taskcluster
from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import ContainerClient
from taskcluster import download, upload
from taskcluster.exceptions import ObjectHashVerificationError, TaskclusterArtifactError

from shared.domain.timestamps import to_iso, utcnow
from shared.validation import check_response
from tests.api.test_errors import rest_error
from tests.conftest import eventually

TEXT = b"hello from the task\n" * 3


def conforms(schema: str, body: dict) -> dict:
    assert check_response(schema, body) == [], body
    return body


@pytest.fixture
def running(queue, new_task, task_id, task_queue_id) -> str:
    """A task whose run 0 a worker holds; its id."""
    queue.createTask(task_id, new_task())
    assert queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})["tasks"]
    return task_id


def expires(minutes: float = 60) -> str:
    return to_iso(utcnow() + timedelta(minutes=minutes))


def object_service(server, answer: dict) -> taskcluster.Object:
    return taskcluster.Object({"rootUrl": server.root_url, "credentials": answer["credentials"], "maxRetries": 0})


def create_and_upload(server, queue, task_id: str, name: str, data: bytes, content_type: str = "text/plain",
                      finish: bool = True) -> dict:
    """A worker's way: createArtifact, the official upload helper, finishArtifact."""
    answer = conforms("post-artifact-response", queue.createArtifact(task_id, "0", name, {
        "storageType": "object", "contentType": content_type, "expires": expires()}))
    upload.uploadFromBuf(projectId=answer["projectId"], name=answer["name"], contentType=content_type,
                         contentLength=len(data), expires=answer["expires"], uploadId=answer["uploadId"],
                         objectService=object_service(server, answer), data=data)
    if finish:
        assert queue.finishArtifact(task_id, "0", name, {"uploadId": answer["uploadId"]}) is None
    return answer


def blobs_of(server, task_id: str) -> list[str]:
    """The task's blobs; none while the container is not made yet (the host makes it with the
    first blob: a test that runs first on its host finds no container)."""
    container = ContainerClient.from_connection_string(server.env["AzureWebJobsStorage"],
                                                       server.env["QUEUE_ARTIFACTS_CONTAINER"])
    try:
        return [blob.name for blob in container.list_blobs(name_starts_with=f"t/{task_id}/")]
    except ResourceNotFoundError:
        return []


def test_small_text_through_the_official_helpers(server, queue, running):
    create_and_upload(server, queue, running, "public/logs/live.log", TEXT)
    data, content_type = download.downloadArtifactToBuf(taskId=running, runId=0, name="public/logs/live.log",
                                                        queueService=queue)
    assert bytes(data) == TEXT and content_type == "text/plain"
    info = conforms("artifact-response", queue.artifactInfo(running, "0", "public/logs/live.log"))
    assert info == {"storageType": "object", "name": "public/logs/live.log", "contentType": "text/plain",
                    "expires": info["expires"]}     # contentLength only when the worker reports it


def test_5_mib_of_binary_from_a_file_to_a_file(server, queue, running, tmp_path):
    data = bytes(range(256)) * (5 * 1024 * 4)
    source, target = tmp_path / "in.bin", tmp_path / "out.bin"
    source.write_bytes(data)
    answer = queue.createArtifact(running, "0", "public/build/app.bin", {
        "storageType": "object", "contentType": "application/octet-stream", "expires": expires(),
        "contentLength": len(data)})
    with source.open("rb") as file:
        upload.uploadFromFile(projectId=answer["projectId"], name=answer["name"],
                              contentType="application/octet-stream", contentLength=len(data),
                              expires=answer["expires"], uploadId=answer["uploadId"],
                              objectService=object_service(server, answer), file=file)
    queue.finishArtifact(running, "0", "public/build/app.bin", {"uploadId": answer["uploadId"]})
    with target.open("wb") as file:
        content_type = download.downloadArtifactToFile(file=file, taskId=running, name="public/build/app.bin",
                                                       queueService=queue)
    assert target.read_bytes() == data and content_type == "application/octet-stream"
    metadata = taskcluster.Object({"rootUrl": server.root_url, "credentials": server.credentials}).object(answer["name"])
    assert metadata["hashes"]["sha256"] == hashlib.sha256(data).hexdigest()


def test_latest_artifact_after_completion_and_the_runs_results(server, queue, running):
    create_and_upload(server, queue, running, "public/logs/live.log", TEXT)
    queue.reportCompleted(running, "0")
    content = conforms("artifact-content-response", queue.latestArtifact(running, "public/logs/live.log"))
    assert content["storageType"] == "object" and content["name"] == f"t/{running}/0/public/logs/live.log"
    assert bytes(download.downloadArtifactToBuf(taskId=running, name="public/logs/live.log",
                                                queueService=queue)[0]) == TEXT
    data, content_type = download.downloadArtifactToBuf(taskId=running, name="public/results.json",
                                                        queueService=queue)
    results = conforms("run-results", json.loads(bytes(data)))
    assert content_type == "application/json" and results["state"] == "completed"
    assert results["logs"] == f"{server.root_url}/api/queue/v1/task/{running}/runs/0/artifacts/public%2Flogs%2Flive.log"
    assert requests.get(results["logs"]).content == TEXT      # the URL in the document serves the log
    names = [artifact["name"] for artifact in conforms("list-artifacts-response",
                                                        queue.listLatestArtifacts(running))["artifacts"]]
    assert names == ["public/logs/live.log", "public/results.json"]


def test_the_results_document_is_an_s3_artifact_of_the_resolved_run(server, queue, running, tmp_path):
    for name in ("public/a.txt", "public/z.txt"):
        create_and_upload(server, queue, running, name, TEXT)
    assert rest_error(queue.artifactInfo, running, "0", "public/results.json").status_code == 404   # not resolved
    queue.reportFailed(running, "0")
    task_expires = queue.task(running)["expires"]
    for info in (queue.artifactInfo(running, "0", "public/results.json"),
                 queue.latestArtifactInfo(running, "public/results.json")):
        assert conforms("artifact-response", info)["storageType"] == "s3"
        assert (info["contentType"], info["expires"]) == ("application/json", task_expires)
    assert [a["name"] for a in queue.listArtifacts(running, "0", query={"limit": 1})["artifacts"]] == ["public/a.txt"]
    second = queue.listArtifacts(running, "0", query={"limit": 1, "continuationToken": conforms(
        "list-artifacts-response", queue.listArtifacts(running, "0", query={"limit": 1}))["continuationToken"]})
    assert [a["name"] for a in second["artifacts"]] == ["public/results.json"]
    answer = requests.get(server.url(f"/task/{running}/artifacts/public/results.json"), allow_redirects=False)
    assert answer.status_code == 303 and answer.headers["x-taskcluster-artifact-storage-type"] == "s3"
    assert conforms("artifact-content-response", queue.latestArtifact(running, "public/results.json"))["storageType"] \
        == "s3"
    with (tmp_path / "results.json").open("wb") as file:
        content_type = download.downloadArtifactToFile(file=file, taskId=running, runId=0,
                                                       name="public/results.json", queueService=queue)
    document = conforms("run-results", json.loads((tmp_path / "results.json").read_bytes()))
    assert content_type == "application/json" and document["state"] == "failed"
    assert [artifact["name"] for artifact in document["artifacts"]] == ["public/a.txt", "public/z.txt"]


def test_a_workers_own_results_json_is_taken_and_served_as_made(queue, running):
    """Taskcluster 106 takes it (checked side by side); the run then has no document of ours."""
    url = "https://example.com/results.json"
    made = queue.createArtifact(running, "0", "public/results.json", {
        "storageType": "reference", "contentType": "application/json", "url": url, "expires": expires()})
    assert made["storageType"] == "reference"
    queue.reportCompleted(running, "0")
    assert queue.artifact(running, "0", "public/results.json") == {"storageType": "reference", "url": url}
    assert [(a["name"], a["storageType"]) for a in queue.listArtifacts(running, "0")["artifacts"]] == [
        ("public/results.json", "reference")]


def test_a_results_document_is_written_by_its_first_read(server, queue, running):
    container = ContainerClient.from_connection_string(server.env["AzureWebJobsStorage"],
                                                       server.env["QUEUE_ARTIFACTS_CONTAINER"])
    blob = container.get_blob_client(f"t/{running}/0/public/results.json")
    for call in (queue.getArtifact, queue.artifact, queue.artifactInfo):
        assert rest_error(call, running, "0", "public/results.json").status_code == 404   # running: none yet
    queue.reportCompleted(running, "0")
    assert not blob.exists()
    assert queue.artifactInfo(running, "0", "public/results.json")["storageType"] == "s3"
    assert blob.exists()
    written = blob.download_blob().readall()
    data, _ = download.downloadArtifactToBuf(taskId=running, name="public/results.json", queueService=queue)
    assert bytes(data) == written          # read again, as it was first written


def test_get_artifact_redirects_303_to_a_url_that_serves_the_bytes(server, queue, running):
    create_and_upload(server, queue, running, "public/report.html", b"<p>ok</p>", "text/html")
    body = conforms("get-artifact-response", queue.getArtifact(running, "0", "public/report.html"))
    for path in (f"/task/{running}/runs/0/artifacts/public%2Freport.html",   # as the clients send it
                 f"/task/{running}/artifacts/public/report.html"):           # as a browser follows a link
        answer = requests.get(server.url(path), allow_redirects=False)
        assert answer.status_code == 303 and answer.headers["x-taskcluster-artifact-storage-type"] == "object"
        assert answer.json()["url"] == answer.headers["Location"]
        served = requests.get(answer.headers["Location"])
        assert served.content == b"<p>ok</p>" and served.headers["Content-Type"] == "text/html"
    assert requests.get(body["url"]).content == b"<p>ok</p>"
    assert requests.get(server.url(f"/task/{running}/artifacts/public/report.html")).content == b"<p>ok</p>"


def test_an_unfinished_upload_is_not_served(server, queue, running):
    answer = create_and_upload(server, queue, running, "public/half.txt", TEXT, finish=False)
    for call in (queue.getArtifact, queue.artifact, queue.artifactInfo):
        assert rest_error(call, running, "0", "public/half.txt").status_code == 404
    with pytest.raises(taskcluster.TaskclusterRestFailure):
        download.downloadArtifactToBuf(taskId=running, runId=0, name="public/half.txt", queueService=queue,
                                       maxRetries=0)
    fresh = queue.createArtifact(running, "0", "public/none.txt", {"storageType": "object",
                                                                   "contentType": "text/plain", "expires": expires()})
    error = rest_error(queue.finishArtifact, running, "0", "public/none.txt", {"uploadId": fresh["uploadId"]})
    assert error.status_code == 400       # nothing uploaded, nothing finished
    queue.finishArtifact(running, "0", "public/half.txt", {"uploadId": answer["uploadId"]})
    assert bytes(download.downloadArtifactToBuf(taskId=running, runId=0, name="public/half.txt",
                                                queueService=queue)[0]) == TEXT


def test_a_hash_mismatch_is_refused(server, queue, running):
    answer = create_and_upload(server, queue, running, "public/a.txt", TEXT)
    objects = object_service(server, answer)
    error = rest_error(objects.finishUpload, answer["name"], {"projectId": answer["projectId"],
                                                              "uploadId": answer["uploadId"],
                                                              "hashes": {"sha256": "0" * 64}})
    assert error.status_code == 409 and "sha256" in error.body["message"]
    # Bytes that are not what the hashes say: the download helper refuses them.
    other = queue.createArtifact(running, "0", "public/b.txt", {"storageType": "object", "contentType": "text/plain",
                                                                "expires": expires()})
    made = object_service(server, other).createUpload(other["name"], {
        "projectId": other["projectId"], "uploadId": other["uploadId"], "expires": other["expires"],
        "hashes": {"sha256": hashlib.sha256(b"what was meant").hexdigest()},
        "proposedUploadMethods": {"putUrl": {"contentType": "text/plain", "contentLength": 8}}})
    put = made["uploadMethod"]["putUrl"]
    assert requests.put(put["url"], data=b"tampered", headers=put["headers"]).status_code == 201
    object_service(server, other).finishUpload(other["name"], {"projectId": other["projectId"],
                                                               "uploadId": other["uploadId"]})
    queue.finishArtifact(running, "0", "public/b.txt", {"uploadId": other["uploadId"]})
    with pytest.raises(ObjectHashVerificationError):
        download.downloadArtifactToBuf(taskId=running, runId=0, name="public/b.txt", queueService=queue)


def test_reference_artifacts_redirect_to_their_url(server, queue, running):
    body = {"storageType": "reference", "contentType": "text/html", "url": "https://example.com/a",
            "expires": expires()}
    assert queue.createArtifact(running, "0", "public/ref", body) == {"storageType": "reference"}
    answer = requests.get(server.url(f"/task/{running}/runs/0/artifacts/public%2Fref"), allow_redirects=False)
    assert answer.status_code == 303 and answer.headers["Location"] == "https://example.com/a"
    assert queue.artifact(running, "0", "public/ref") == {"storageType": "reference", "url": "https://example.com/a"}
    queue.createArtifact(running, "0", "public/ref", {**body, "url": "https://example.com/b"})   # a new URL: fine
    assert queue.getArtifact(running, "0", "public/ref")["url"] == "https://example.com/b"


def test_link_artifacts_are_served_as_the_artifact_they_name_and_cycles_are_refused(server, queue, running):
    create_and_upload(server, queue, running, "public/target.txt", TEXT)
    for name, target in (("public/link", "public/target.txt"), ("public/a", "public/b"), ("public/b", "public/a")):
        assert queue.createArtifact(running, "0", name, {"storageType": "link", "artifact": target,
                                                         "expires": expires()}) == {"storageType": "link"}
    location = queue.getArtifact(running, "0", "public/link")
    assert location["storageType"] == "object" and requests.get(location["url"]).content == TEXT
    assert bytes(download.downloadArtifactToBuf(taskId=running, runId=0, name="public/link",
                                                queueService=queue)[0]) == TEXT
    assert queue.artifactInfo(running, "0", "public/link")["storageType"] == "link"
    for call in (queue.getArtifact, queue.artifact):
        error = rest_error(call, running, "0", "public/a")
        assert error.status_code == 400 and "cycle" in error.body["message"]


def test_error_artifacts_answer_424_with_reason_and_message(server, queue, running):
    queue.createArtifact(running, "0", "public/missing.zip", {
        "storageType": "error", "reason": "file-missing-on-worker", "message": "no such file", "expires": expires()})
    answer = requests.get(server.url(f"/task/{running}/runs/0/artifacts/public%2Fmissing.zip"), allow_redirects=False)
    assert answer.status_code == 424 and answer.json() == {"reason": "file-missing-on-worker",
                                                           "message": "no such file"}
    assert queue.artifact(running, "0", "public/missing.zip") == {
        "storageType": "error", "reason": "file-missing-on-worker", "message": "no such file"}
    with pytest.raises(TaskclusterArtifactError):
        download.downloadArtifactToBuf(taskId=running, runId=0, name="public/missing.zip", queueService=queue)


def test_s3_artifacts_take_a_plain_put_as_older_workers_send_it(server, queue, running):
    answer = conforms("post-artifact-response", queue.createArtifact(running, "0", "public/old.log", {
        "storageType": "s3", "contentType": "text/plain; charset=utf-8", "expires": expires()}))
    # `curl -T file -X PUT <putUrl>` with the content type: no other header.
    put = requests.put(answer["putUrl"], data=TEXT, headers={"Content-Type": "text/plain; charset=utf-8"})
    assert put.status_code == 201, put.text
    location = queue.getArtifact(running, "0", "public/old.log")
    served = requests.get(location["url"])
    assert served.content == TEXT and served.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert bytes(download.downloadArtifactToBuf(taskId=running, runId=0, name="public/old.log",
                                                queueService=queue)[0]) == TEXT
    queue.reportCompleted(running, "0")
    results = json.loads(bytes(download.downloadArtifactToBuf(taskId=running, name="public/results.json",
                                                              queueService=queue)[0]))
    assert results["artifacts"][0]["name"] == "public/old.log" and results["artifacts"][0]["contentLength"] == len(TEXT)


def test_creating_again_is_idempotent_and_other_changes_are_409(server, queue, running):
    body = {"storageType": "s3", "contentType": "text/plain", "expires": expires()}
    queue.createArtifact(running, "0", "public/x", body)
    assert queue.createArtifact(running, "0", "public/x", body)["storageType"] == "s3"
    for change in ({"contentType": "text/html"}, {"expires": expires(30)}):
        assert rest_error(queue.createArtifact, running, "0", "public/x", {**body, **change}).status_code == 409
    error = rest_error(queue.createArtifact, running, "0", "public/x", {
        "storageType": "reference", "contentType": "text/plain", "url": "https://example.com", "expires": expires()})
    assert error.status_code == 409 and error.body["code"] == "RequestConflict"


def test_a_resolved_run_takes_no_artifacts(server, queue, running):
    queue.reportFailed(running, "0")
    error = rest_error(queue.createArtifact, running, "0", "public/late.log",
                       {"storageType": "s3", "contentType": "text/plain", "expires": expires()})
    assert error.status_code == 409 and error.body["code"] == "RequestConflict"


def test_listing_in_pages(server, queue, running):
    for index in range(5):
        queue.createArtifact(running, "0", f"public/{index}.txt", {
            "storageType": "reference", "contentType": "text/plain", "url": f"https://e.com/{index}",
            "expires": expires()})
    first = conforms("list-artifacts-response", queue.listArtifacts(running, "0", query={"limit": 3}))
    rest = queue.listArtifacts(running, "0", query={"continuationToken": first["continuationToken"]})
    assert [a["name"] for a in first["artifacts"] + rest["artifacts"]] == [f"public/{i}.txt" for i in range(5)]
    assert "continuationToken" not in rest
    assert rest_error(queue.listArtifacts, running, "1").status_code == 404


def test_an_expired_artifact_is_deleted_with_its_blob(server, queue, running):
    create_and_upload(server, queue, running, "public/soon-gone.txt", TEXT)
    answer = queue.createArtifact(running, "0", "public/brief.txt", {"storageType": "object",
                                                                     "contentType": "text/plain",
                                                                     "expires": expires(0.05)})
    upload.uploadFromBuf(projectId=answer["projectId"], name=answer["name"], contentType="text/plain",
                         contentLength=len(TEXT), expires=answer["expires"], uploadId=answer["uploadId"],
                         objectService=object_service(server, answer), data=TEXT)
    queue.finishArtifact(running, "0", "public/brief.txt", {"uploadId": answer["uploadId"]})
    assert f"t/{running}/0/public/brief.txt" in blobs_of(server, running)
    eventually(lambda: f"t/{running}/0/public/brief.txt" not in blobs_of(server, running), timeout=20,
               message="the expired artifact's blob deleted")
    assert rest_error(queue.artifactInfo, running, "0", "public/brief.txt").status_code == 404
    assert blobs_of(server, running) == [f"t/{running}/0/public/soon-gone.txt"]


LONG = "public/" + "x" * 1017


@pytest.mark.parametrize("name, change, field", [
    ("public/a", {"contentType": "not a media type"}, "contentType"),
    ("public/a", {"contentType": ""}, "contentType"),
    ("public/a", {"contentType": "text/" + "x" * 260}, "contentType"),
    ("public/a", {"contentType": "text/plain\r\nX-Evil: 1"}, "contentType"),
    ("public/a", {"expires": "tomorrow"}, "expires"),
    ("public/a", {"expires": "2001-01-01T00:00:00Z"}, "expires"),
    ("public/a", {"expires": "2999-01-01T00:00:00Z"}, "expires"),
    ("public/a", {"storageType": "ftp"}, "storageType"),
    ("public/a", {"contentLength": -1}, "contentLength"),
    ("public/a", {"extra": 1}, "extra"),
    (LONG + "y", {}, "name"),
    ("public/caf\u00e9", {}, "name"),
    ("public/a\nb", {}, "name"),
])
def test_bad_input_is_400_naming_the_field_and_stores_nothing(server, queue, running, name, change, field):
    body = {"storageType": "object", "contentType": "text/plain", "expires": expires(), **change}
    error = rest_error(queue.createArtifact, running, "0", name, body)
    assert error.status_code == 400 and field in error.body["message"], error.body
    assert queue.listArtifacts(running, "0") == {"artifacts": []} and blobs_of(server, running) == []


def test_bad_reference_urls_and_link_targets_are_400(server, queue, running):
    for body, field in (({"storageType": "reference", "contentType": "text/plain", "url": "not a url"}, "url"),
                        ({"storageType": "reference", "contentType": "text/plain",
                          "url": "https://e.com/\r\nSet-Cookie: x"}, "url"),
                        ({"storageType": "link", "artifact": ""}, "artifact"),
                        ({"storageType": "error", "reason": "bored", "message": "m"}, "reason")):
        error = rest_error(queue.createArtifact, running, "0", "public/a", {**body, "expires": expires()})
        assert error.status_code == 400 and field in error.body["message"], error.body
    assert queue.listArtifacts(running, "0") == {"artifacts": []}


def test_the_longest_name_works(server, queue, running):
    create_and_upload(server, queue, running, LONG, TEXT)
    assert len(LONG) == 1024
    assert bytes(download.downloadArtifactToBuf(taskId=running, runId=0, name=LONG, queueService=queue)[0]) == TEXT


def test_odd_names_travel_and_are_kept_apart(server, queue, running):
    names = ["public/a b?c#d%e&f=g+h", "public/../x", "public/./x", "public//x", "public/x/", "public/~x\\y"]
    for index, name in enumerate(names):
        create_and_upload(server, queue, running, name, str(index).encode())
    for index, name in enumerate(names):
        assert requests.get(queue.getArtifact(running, "0", name)["url"]).content == str(index).encode(), name
    assert sorted(a["name"] for a in queue.listArtifacts(running, "0")["artifacts"]) == sorted(names)


def test_unknown_tasks_runs_and_artifacts(server, queue, running):
    assert rest_error(queue.latestArtifact, taskcluster.slugId(), "public/x").status_code == 404
    assert rest_error(queue.listLatestArtifacts, taskcluster.slugId()).status_code == 404
    assert rest_error(queue.getArtifact, running, "0", "public/none").status_code == 404
    body = {"storageType": "s3", "contentType": "text/plain", "expires": expires()}
    assert rest_error(queue.createArtifact, taskcluster.slugId(), "0", "public/x", body).status_code == 400
    assert rest_error(queue.createArtifact, running, "3", "public/x", body).status_code == 400


def test_rules_no_schema_says_are_taskclusters_input_errors(server, queue, new_task, running, task_queue_id):
    """The body is well formed but the run, task or dates do not allow it: Taskcluster answers
    InputError (400), keeping InputValidationError for a body its schema refuses."""
    unclaimed = taskcluster.slugId()
    queue.createTask(unclaimed, new_task())
    body = {"storageType": "s3", "contentType": "text/plain", "expires": expires()}
    for task_id, run_id, change in ((taskcluster.slugId(), "0", {}), (running, "3", {}), (unclaimed, "0", {}),
                                    (running, "0", {"expires": "2001-01-01T00:00:00Z"}),
                                    (running, "0", {"expires": "2999-01-01T00:00:00Z"})):
        error = rest_error(queue.createArtifact, task_id, run_id, "public/x", {**body, **change})
        assert (error.status_code, error.body["code"]) == (400, "InputError"), (task_id, run_id, change)
    queue.createArtifact(running, "0", "public/ref", {"storageType": "reference", "url": "https://example.com/r",
                                                      "contentType": "text/plain", "expires": expires()})
    error = rest_error(queue.finishArtifact, running, "0", "public/ref", {"uploadId": taskcluster.slugId()})
    assert (error.status_code, error.body["code"]) == (400, "InputError")
    error = rest_error(queue.createArtifact, running, "0", "public/x", {**body, "storageType": "ftp"})
    assert error.body["code"] == "InputValidationError"
