"""The secrets service through a real host with the official `taskcluster.Secrets` client:
set, get, remove and list (paged); expiry (404, as Taskcluster's); Taskcluster's scopes; a
task reading a secret with the credentials its claim hands out; values encrypted at rest and
never in a log line or an error."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import taskcluster
from azure.data.tables import TableClient

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.validation import check_response
from tests.api.conftest import service_client, temporary
from tests.api.test_errors import rest_error
from tests.conftest import ROOT_CREDENTIALS


def secrets_client(server, credentials: dict | None = ROOT_CREDENTIALS) -> taskcluster.Secrets:
    return service_client(taskcluster.Secrets, server, credentials)


@pytest.fixture
def secrets(server) -> taskcluster.Secrets:
    return secrets_client(server)


@pytest.fixture
def prefix() -> str:
    """Secret names of the test's own."""
    return f"project/t{new_slugid()[:8]}/"


def in_hours(hours: float) -> str:
    return to_iso(utcnow() + timedelta(hours=hours))


def test_set_get_remove(secrets, prefix):
    name = prefix + "deploy token"          # any characters, `/` and spaces too
    expires = in_hours(2)
    assert secrets.set(name, {"secret": {"token": "s3cr3t", "n": 1}, "expires": expires}) == {}
    answer = secrets.get(name)
    assert answer == {"secret": {"token": "s3cr3t", "n": 1}, "expires": expires}
    assert check_response("secrets/secret", answer) == []
    secrets.set(name, {"secret": {"token": "rotated"}, "expires": expires})      # set again: replaced
    assert secrets.get(name)["secret"] == {"token": "rotated"}
    assert secrets.remove(name) == {}
    error = rest_error(secrets.get, name)
    assert error.status_code == 404 and error.body["code"] == "ResourceNotFound"
    assert secrets.remove(name) == {}       # removing what is not there succeeds, as in Taskcluster


def test_an_expired_secret_is_not_found_and_not_listed(secrets, prefix):
    """Taskcluster v106 answers 404 (its query leaves expired secrets out), not the 410 its
    API description promises."""
    secrets.set(prefix + "old", {"secret": {"v": 1}, "expires": in_hours(-1)})
    secrets.set(prefix + "new", {"secret": {"v": 2}, "expires": in_hours(1)})
    error = rest_error(secrets.get, prefix + "old")
    assert error.status_code == 404 and error.body["code"] == "ResourceNotFound"
    names = _all_names(secrets)
    assert prefix + "new" in names and prefix + "old" not in names


def _all_names(secrets, limit: int | None = None) -> list[str]:
    names, token = [], None
    while True:
        query = {**({"limit": limit} if limit else {}), **({"continuationToken": token} if token else {})}
        page = secrets.list(query=query)
        assert check_response("secrets/secret-list", page) == []
        names += page["secrets"]
        token = page.get("continuationToken")
        if not token:
            return names


def test_list_is_paged(secrets, prefix):
    wanted = [f"{prefix}{number:02d}" for number in range(5)]
    for name in wanted:
        secrets.set(name, {"secret": {}, "expires": in_hours(1)})
    first = secrets.list(query={"limit": 2})   # fewer if some expired: Taskcluster's "may return less"
    assert len(first["secrets"]) <= 2 and first["continuationToken"]
    names = _all_names(secrets, limit=2)
    assert [name for name in names if name.startswith(prefix)] == wanted
    assert len(names) == len(set(names))
    error = rest_error(lambda: secrets.list(query={"continuationToken": "garbage!"}))
    assert (error.status_code, error.body["code"]) == (400, "InputError")   # Taskcluster's paginateResults
    assert "Invalid continuation token" in error.body["message"]


def test_scopes_are_taskclusters(server, secrets, prefix):
    secrets.set(prefix + "team/a", {"secret": {"a": 1}, "expires": in_hours(1)})
    reader = secrets_client(server, temporary(ROOT_CREDENTIALS, [f"secrets:get:{prefix}team/*"]))
    assert reader.get(prefix + "team/a")["secret"] == {"a": 1}
    # Refused whether or not the secret exists: 403 tells nothing of it.
    for name in (prefix + "other", prefix + "team-b"):
        refused = rest_error(reader.get, name)
        assert refused.status_code == 403 and f"secrets:get:{name}" in refused.body["message"]
    assert rest_error(reader.set, prefix + "team/a", {"secret": {}, "expires": in_hours(1)}).status_code == 403
    assert rest_error(reader.remove, prefix + "team/a").status_code == 403
    writer = secrets_client(server, temporary(ROOT_CREDENTIALS, [f"secrets:set:{prefix}team/*"]))
    writer.set(prefix + "team/b", {"secret": {"b": 2}, "expires": in_hours(1)})
    assert rest_error(writer.get, prefix + "team/b").status_code == 403      # setting is not reading
    assert secrets_client(server, None).list()["secrets"] is not None         # names: anyone, as Taskcluster's role
    assert rest_error(secrets_client(server, None).get, prefix + "team/a").status_code == 403


def test_a_task_reads_a_secret_with_its_runs_credentials(server, queue, secrets, prefix, new_task, task_id,
                                                         task_queue_id):
    secrets.set(prefix + "ci/token", {"secret": {"token": "for-the-task"}, "expires": in_hours(1)})
    secrets.set(prefix + "ci/other", {"secret": {"token": "not-for-it"}, "expires": in_hours(1)})
    queue.createTask(task_id, new_task(scopes=[f"secrets:get:{prefix}ci/token"]))
    claim = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})["tasks"][0]
    as_task = secrets_client(server, claim["credentials"])
    assert as_task.get(prefix + "ci/token")["secret"] == {"token": "for-the-task"}
    assert rest_error(as_task.get, prefix + "ci/other").status_code == 403


def test_values_are_encrypted_at_rest_and_never_logged_nor_shown_in_errors(server, secrets, prefix):
    value = f"never-shown-{new_slugid()}"
    name = prefix + "leak-check"
    secrets.set(name, {"secret": {"password": value}, "expires": in_hours(1)})
    assert secrets.get(name)["secret"] == {"password": value}
    refusals = [
        rest_error(secrets.set, name, {"secret": {"password": value}, "expires": "not a date"}),
        rest_error(secrets.set, name, {"secret": value, "expires": in_hours(1)}),           # not an object
        rest_error(secrets.set, name, {"secret": {"password": value}}),                     # no expires
        rest_error(secrets_client(server, None).set, name, {"secret": {"password": value}, "expires": in_hours(1)}),
    ]
    assert [refusal.status_code for refusal in refusals] == [400, 400, 400, 403]
    for refusal in refusals:
        assert value not in json.dumps(refusal.body), refusal.body
    # Taskcluster's cleanPayload; a call refused for its scopes is refused before its body is read.
    assert [(refusal.body["requestInfo"]["payload"] or {}).get("secret") for refusal in refusals] == \
        ["(OMITTED)", "(OMITTED)", "(OMITTED)", None]
    assert "secret: breaks the schema's 'type' rule" in refusals[1].body["message"]
    table = TableClient.from_connection_string(server.env["AzureWebJobsStorage"],
                                               server.env["QUEUE_TABLE_PREFIX"] + "Secrets")
    rows = [row for row in table.list_entities() if row["name"] == name]
    assert len(rows) == 1 and value not in json.dumps(dict(rows[0]), default=str)
    log = server.log_path.read_text()
    assert name in log and value not in log
