"""A run's results document, written when its task resolves and served as the artifact
`public/results.json` of the run."""

import json
from datetime import timedelta

import pytest

from shared.domain.errors import NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.run_results import RESULTS_NAME, artifact_url
from shared.validation import check_response
from tests.conftest import make_task
from tests.services.test_artifacts import DATA, upload_object
from tests.services.test_dependencies import deliver_events


def results(services, task_id: str, run_id: int) -> dict:
    location = services.artifacts.location(task_id, run_id, RESULTS_NAME)
    document = json.loads(services.objects.blobs.read_at(location["url"]))
    assert check_response("run-results", document) == []
    return document


@pytest.fixture
def claimed(services, task_queue_id):
    task_id = new_slugid()
    services.tasks.create(task_id, make_task(task_queue_id, retries=1))
    services.claims.claim_work(task_queue_id, "wg", "w1", 1)
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
    assert info["storageType"] == "object" and info["contentType"] == "application/json"
    assert info["expires"] == services.tasks.definition(claimed)["expires"]


def test_handling_the_resolution_again_changes_nothing(services, claimed):
    services.resolutions.failed(claimed, 0)
    first = results(services, claimed, 0)
    assert services.resolution_handler.handle(claimed, 0)
    assert results(services, claimed, 0) == first
    page = services.artifacts.list(claimed, 0, None, None)["artifacts"]
    assert [artifact["name"] for artifact in page] == [RESULTS_NAME]


def test_a_retried_run_gets_its_results_when_the_task_resolves(services, claimed, task_queue_id):
    services.resolutions.exception(claimed, 0, "worker-shutdown")        # retried: the task is not resolved
    with pytest.raises(NotFound):
        services.artifacts.info(claimed, 0, RESULTS_NAME)
    services.claims.claim_work(task_queue_id, "wg", "w2", 1)
    services.resolutions.completed(claimed, 1)
    deliver_events(services)
    assert results(services, claimed, 0)["reasonResolved"] == "worker-shutdown"
    assert results(services, claimed, 1)["workerId"] == "w2"


def test_a_task_canceled_before_any_claim_has_results_without_a_worker(services, task_queue_id):
    task_id = new_slugid()
    services.tasks.create(task_id, make_task(task_queue_id))
    services.tasks.cancel(task_id)
    document = results(services, task_id, 0)
    assert document["reasonResolved"] == "canceled" and document["artifacts"] == [] and document["logs"] is None
