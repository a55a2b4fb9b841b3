"""A run's results document, served as the artifact `public/results.json` of the run once
the run is over for good, and written by its first read: one blob, with no row of its own."""

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from shared.domain.artifacts import RESULTS_NAME
from shared.domain.errors import NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.tasks.run_results import results_blob
from shared.services.tasks.run_results import artifact_url
from shared.storage.client.account import OPERATIONS
from shared.validation import check_response
from tests.conftest import make_task
from tests.services.artifacts.test_artifacts import DATA, upload_object
from tests.services.dependencies.test_dependency_tracker import deliver_events


def results(services, task_id: str, run_id: int) -> dict:
    location = services.artifacts.location(task_id, run_id, RESULTS_NAME)
    document = json.loads(services.objects.blobs.read_at(location["url"]))
    assert check_response("run-results", document) == []
    return document


@pytest.fixture
def claimed(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, retries=1))
    services.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    return task_id


def test_a_completed_run_has_its_results_with_its_artifacts(services, claimed):
    upload_object(services, claimed, "public/logs/live.log")
    services.artifacts.create(claimed, 0, "public/missing", {"storageType": "error", "reason": "file-missing-on-worker",
                                                             "message": "gone", "expires": to_iso(utcnow() + timedelta(
                                                                 hours=1))})
    services.artifacts.create(claimed, 0, "unfinished", {"storageType": "object", "contentType": "text/plain",
                                                         "expires": to_iso(utcnow() + timedelta(hours=1))})
    services.resolutions.completed(claimed, 0)
    document = results(services, claimed, 0)
    assert (document["taskId"], document["runId"], document["state"], document["workerId"]) == \
        (claimed, 0, "completed", "w1")
    assert document["reasonResolved"] == "completed" and document["resolved"] >= document["started"]
    listed = {artifact["name"]: artifact for artifact in document["artifacts"]}
    assert set(listed) == {"public/logs/live.log", "public/missing"}     # not the unfinished one, nor itself
    log = listed["public/logs/live.log"]
    assert log["contentLength"] == len(DATA) and log["contentType"] == "text/plain" and "sha256" in log["hashes"]
    assert document["logs"] == log["url"] == artifact_url("http://127.0.0.1:7071", claimed, 0, "public/logs/live.log")
    info = services.artifacts.info(claimed, None, RESULTS_NAME)
    size = len(services.objects.blobs.read(results_blob(claimed, 0)))
    assert info == {"storageType": "s3", "name": RESULTS_NAME, "contentType": "application/json",
                    "expires": services.task_calls.definition(claimed)["expires"], "contentLength": size}


def test_the_document_is_one_blob_written_by_its_first_read_without_rows(services, claimed):
    before = OPERATIONS.value
    services.resolutions.completed(claimed, 0)
    resolving = OPERATIONS.value - before
    assert services.objects.blobs.size(results_blob(claimed, 0)) is None        # the resolution wrote none
    assert services.artifacts.artifact_table.load(claimed, 0, RESULTS_NAME) is None
    assert services.objects.object_table.load(f"t/{claimed}/0/{RESULTS_NAME}") is None
    assert services.artifact_expiry.index.due(utcnow() + timedelta(days=3650), 10) == []
    before = OPERATIONS.value
    first = services.artifacts.info(claimed, 0, RESULTS_NAME)
    # no worker's artifact of its name, the task, a HEAD finding no blob, the run's artifacts, the PUT
    assert OPERATIONS.value - before == 5
    before = OPERATIONS.value
    assert services.artifacts.info(claimed, 0, RESULTS_NAME) == first
    assert OPERATIONS.value - before == 3        # no worker's artifact, the task, the HEAD
    assert first["contentLength"] == len(services.objects.blobs.read(results_blob(claimed, 0)))
    assert resolving < 8


def test_a_workers_own_artifact_of_its_name_is_the_runs_and_no_document_is_written(services, claimed):
    """As Taskcluster takes it: `public/results.json` is a common name for a task's own results."""
    expires = to_iso(utcnow() + timedelta(hours=1))
    services.artifacts.create(claimed, 0, RESULTS_NAME, {"storageType": "reference", "contentType": "application/json",
                                                         "url": "https://example.com/mine.json", "expires": expires})
    services.resolutions.completed(claimed, 0)
    for run_id in (0, None):
        assert services.artifacts.info(claimed, run_id, RESULTS_NAME)["storageType"] == "reference"
        assert services.artifacts.location(claimed, run_id, RESULTS_NAME) == {
            "storageType": "reference", "url": "https://example.com/mine.json"}
    for limit in (1, 2):
        page, after = services.artifacts.list(claimed, 0, "", limit)
        assert [(a["name"], a["storageType"]) for a in page["artifacts"]] == [(RESULTS_NAME, "reference")]
        assert after is None
    assert services.objects.blobs.size(results_blob(claimed, 0)) is None


def test_a_document_lost_is_written_again_by_the_next_read(services, claimed):
    services.resolutions.completed(claimed, 0)
    assert services.artifacts.list(claimed, None, "", 1000)[0]["artifacts"][0]["name"] == RESULTS_NAME
    services.objects.blobs.delete(results_blob(claimed, 0))
    assert services.artifacts.location(claimed, None, RESULTS_NAME)["storageType"] == "s3"
    assert results(services, claimed, 0)["state"] == "completed"


def test_a_running_run_or_a_task_about_to_expire_gets_none_written(services, claimed):
    with pytest.raises(NotFound):
        services.artifacts.info(claimed, 0, RESULTS_NAME)
    assert services.artifacts.list(claimed, None, "", 1000)[0]["artifacts"] == []
    services.resolutions.completed(claimed, 0)
    task = services.task_calls.updater.task_table.load(claimed)
    expiring = replace(task, summary={**task.summary, "expires": to_iso(utcnow() + timedelta(minutes=5))})
    assert services.artifacts._load(claimed, 0, RESULTS_NAME, expiring) is None
    assert services.objects.blobs.size(results_blob(claimed, 0)) is None      # none to outlive the task's sweep


def test_it_lists_the_artifacts_present_when_first_read(services, task_queue_id):
    """A run resolved `exception` may take artifacts for 25 minutes more; its task, retried,
    is still live until then, so its document waits for the task's resolution."""
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id, retries=0))
    services.work_claimer.claim_work(task_queue_id, "wg", "w1", 1)
    services.resolutions.exception(task_id, 0, "worker-shutdown")       # no retries left: resolved
    upload_object(services, task_id, "public/logs/live.log")
    assert [artifact["name"] for artifact in results(services, task_id, 0)["artifacts"]] == ["public/logs/live.log"]


def test_the_document_is_listed_where_its_name_sorts_across_pages(services, claimed):
    names = ["public/a", "public/q", "public/results", "public/s", "public/z"]
    for name in names:
        services.artifacts.create(claimed, 0, name, {"storageType": "reference", "contentType": "text/plain",
                                                     "url": "https://example.com", "expires": to_iso(
                                                         utcnow() + timedelta(hours=1))})
    services.resolutions.completed(claimed, 0)
    everything = sorted(names + [RESULTS_NAME])
    for limit in range(1, 8):
        listed, after, pages = [], "", 0
        while after is not None:
            page, after = services.artifacts.list(claimed, 0, after, limit)
            listed += [artifact["name"] for artifact in page["artifacts"]]
            pages += 1
        assert listed == everything and pages <= len(everything) // limit + 1, limit


def test_handling_the_resolution_again_changes_nothing(services, claimed):
    services.resolutions.failed(claimed, 0)
    first = results(services, claimed, 0)
    assert services.dependency_resolver.handle(claimed, 0)
    assert results(services, claimed, 0) == first       # and a later read writes nothing new
    page = services.artifacts.list(claimed, 0, "", 1000)[0]["artifacts"]
    assert [artifact["name"] for artifact in page] == [RESULTS_NAME]


def test_a_rerun_leaves_the_earlier_runs_document_as_it_was(services, claimed, task_queue_id):
    services.resolutions.failed(claimed, 0)
    services.objects.blobs.put(results_blob(claimed, 0), b'{"written": "once"}', "application/json")
    services.task_calls.rerun(claimed)
    services.work_claimer.claim_work(task_queue_id, "wg", "w2", 1)
    services.resolutions.completed(claimed, 1)
    assert services.objects.blobs.read(results_blob(claimed, 0)) == b'{"written": "once"}'
    assert results(services, claimed, 1)["workerId"] == "w2"


def test_a_retried_run_gets_its_results_when_the_task_resolves(services, claimed, task_queue_id):
    services.resolutions.exception(claimed, 0, "worker-shutdown")        # retried: the task is not resolved
    with pytest.raises(NotFound):
        services.artifacts.info(claimed, 0, RESULTS_NAME)
    services.work_claimer.claim_work(task_queue_id, "wg", "w2", 1)
    services.resolutions.completed(claimed, 1)
    deliver_events(services)
    assert results(services, claimed, 0)["reasonResolved"] == "worker-shutdown"
    assert results(services, claimed, 1)["workerId"] == "w2"


def test_a_task_canceled_before_any_claim_has_results_without_a_worker(services, task_queue_id):
    task_id = new_slugid()
    services.task_calls.create(task_id, make_task(task_queue_id))
    services.task_calls.cancel(task_id)
    document = results(services, task_id, 0)
    assert document["reasonResolved"] == "canceled" and document["artifacts"] == [] and document["logs"] is None
