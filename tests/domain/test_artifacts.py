"""Taskcluster's rules for creating artifacts: which runs take them, expiry, names, and
what creating one again may change."""

from dataclasses import replace
from datetime import timedelta

import pytest

from shared.domain.artifacts import (Artifact, StorageType, check_expires, check_name, check_run, object_name,
                                     recreated, requested)
from shared.domain.errors import Conflict, InvalidInput
from shared.domain.runs import ReasonCreated, ReasonResolved, Run, RunState
from shared.domain.timestamps import to_iso, utcnow

NOW = utcnow()
LATER = to_iso(NOW + timedelta(days=1))
TASK_EXPIRES = to_iso(NOW + timedelta(days=30))


def run(state=RunState.RUNNING, claimed=True, resolved_ago=None) -> Run:
    return Run(0, state, ReasonCreated.SCHEDULED, to_iso(NOW), worker_group="wg" if claimed else None,
               worker_id="w1" if claimed else None,
               resolved=to_iso(NOW - resolved_ago) if resolved_ago is not None else None,
               reason_resolved=ReasonResolved.WORKER_SHUTDOWN if state is RunState.EXCEPTION else None)


def artifact(storage_type="s3", expires=LATER, **body) -> Artifact:
    request = {"storageType": storage_type, "contentType": "text/plain", **body}
    return requested("taskId", 0, "public/a.txt", request, expires)


def test_a_running_claimed_run_takes_artifacts():
    check_run("t", run(), NOW)


@pytest.mark.parametrize("state", [RunState.COMPLETED, RunState.FAILED, RunState.PENDING])
def test_other_runs_are_a_conflict(state):
    with pytest.raises(Conflict):
        check_run("t", run(state, resolved_ago=timedelta(0)), NOW)


def test_an_exception_run_takes_artifacts_for_25_minutes():
    check_run("t", run(RunState.EXCEPTION, resolved_ago=timedelta(minutes=24)), NOW)
    with pytest.raises(Conflict):
        check_run("t", run(RunState.EXCEPTION, resolved_ago=timedelta(minutes=26)), NOW)


def test_a_run_missing_or_never_claimed_is_bad_input():
    with pytest.raises(InvalidInput, match="runId"):
        check_run("t", None, NOW)
    with pytest.raises(InvalidInput, match="never claimed"):
        check_run("t", run(RunState.EXCEPTION, claimed=False, resolved_ago=timedelta(0)), NOW)


def test_an_artifact_may_expire_with_its_task_given_to_the_microsecond():
    """A Python client's isoformat() carries microseconds; the task's expires is stored to the
    millisecond, and Taskcluster compares the two as milliseconds."""
    assert check_expires("2031-01-01T00:00:00.000999+00:00", "2031-01-01T00:00:00.000Z", NOW) == \
        "2031-01-01T00:00:00.000Z"


def test_expires_is_normalized_and_bounded():
    assert check_expires("2030-01-01T00:00:00+01:00", "2031-01-01T00:00:00.000Z", NOW) == "2029-12-31T23:00:00.000Z"
    check_expires(to_iso(NOW - timedelta(minutes=14)), TASK_EXPIRES, NOW)   # clock skew
    with pytest.raises(InvalidInput, match="in the past"):
        check_expires(to_iso(NOW - timedelta(minutes=16)), TASK_EXPIRES, NOW)
    with pytest.raises(InvalidInput, match="after the task"):
        check_expires(to_iso(NOW + timedelta(days=31)), TASK_EXPIRES, NOW)


@pytest.mark.parametrize("name", ["", "x" * 1025, "caf\u00e9", "a\nb", "tab\there"])
def test_names_are_printable_ascii_of_1_to_1024_characters(name):
    with pytest.raises(InvalidInput, match="name"):
        check_name(name)


def test_names_may_hold_slashes_and_odd_printable_characters():
    for name in ("public/logs/live.log", "x" * 1024, "../a b?#%~", "/"):
        check_name(name)
    assert object_name("T", 2, "public/x") == "t/T/2/public/x"


def test_only_object_artifacts_wait_for_their_finish():
    assert not artifact("object").present and artifact("s3").present and artifact("error", reason="r",
                                                                                   message="m").present
    assert artifact("link", artifact="x", contentType=None).content_type == "application/binary"


def test_creating_the_same_again_changes_nothing():
    original = replace(artifact("object"), details={"uploadId": "u"})
    assert recreated(original, artifact("object")) is original
    s3 = replace(artifact("s3"), details={"committed": True})
    assert recreated(s3, artifact("s3")) is s3


def test_a_later_expiry_is_kept_but_an_earlier_one_is_a_conflict():
    original = artifact("s3")
    later = to_iso(NOW + timedelta(days=2))
    assert recreated(original, artifact("s3", expires=later)).expires == later
    with pytest.raises(Conflict):
        recreated(original, artifact("s3", expires=to_iso(NOW + timedelta(hours=1))))


def test_an_objects_expiry_is_fixed():
    with pytest.raises(Conflict):
        recreated(artifact("object"), artifact("object", expires=to_iso(NOW + timedelta(days=2))))


def test_a_reference_may_change_its_url_or_become_a_link():
    reference = artifact("reference", url="https://example.com/a")
    moved = recreated(reference, artifact("reference", url="https://example.com/b"))
    assert moved.details == {"url": "https://example.com/b"}
    linked = recreated(reference, artifact("link", artifact="public/b.txt"))
    assert linked.storage_type is StorageType.LINK and linked.details == {"artifact": "public/b.txt"}
    assert linked.content_type == "text/plain"   # kept, as Taskcluster does


@pytest.mark.parametrize("original, new", [
    (lambda: artifact("s3"), lambda: artifact("object")),
    (lambda: artifact("s3"), lambda: artifact("reference", url="https://e.com")),
    (lambda: artifact("s3"), lambda: artifact("s3", contentType="text/html")),
    (lambda: artifact("link", artifact="a"), lambda: artifact("link", artifact="b")),
    (lambda: artifact("error", reason="file-missing-on-worker", message="m"),
     lambda: artifact("error", reason="file-missing-on-worker", message="other")),
    (lambda: artifact("link", artifact="a"), lambda: artifact("reference", url="https://e.com")),
])
def test_every_other_change_is_a_conflict(original, new):
    with pytest.raises(Conflict):
        recreated(original(), new())
