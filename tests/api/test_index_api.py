"""The index service through a real host with the official `taskcluster.Index` client:
inserting and finding tasks with the rank rule, namespaces and tasks listed page by page,
completed tasks indexed from their routes with rank, expiry and data, findArtifactFromTask's
redirects (public, and signed as the caller's scopes allow), scopes and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.validation import check_response
from tests.api.conftest import as_client, service_client, temporary
from tests.api.test_artifacts import create_and_upload
from tests.api.test_errors import rest_error
from tests.conftest import ROOT_CREDENTIALS, eventually


def index_client(server, credentials: dict | None = ROOT_CREDENTIALS) -> taskcluster.Index:
    return service_client(taskcluster.Index, server, credentials)


@pytest.fixture
def index(server) -> taskcluster.Index:
    return index_client(server)


@pytest.fixture
def space() -> str:
    """A namespace of the test's own."""
    return "t" + new_slugid()[:10].replace("_", "x").replace("-", "y").lower()


def in_days(days: float) -> str:
    return to_iso(utcnow() + timedelta(days=days))


def entry(task_id: str, rank: float = 0, data: dict | None = None, days: float = 30) -> dict:
    return {"taskId": task_id, "rank": rank, "data": data or {}, "expires": in_days(days)}


def completed(queue, new_task, task_queue_id: str, **definition) -> str:
    """A task created, claimed and reported completed; its id."""
    task_id = new_slugid()
    queue.createTask(task_id, new_task(**definition))
    claim = queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})["tasks"][0]
    assert claim["status"]["taskId"] == task_id
    queue.reportCompleted(task_id, "0")
    return task_id


def test_insert_then_find_with_the_rank_rule(index, space):
    first, second, third = new_slugid(), new_slugid(), new_slugid()
    path = f"{space}.builds.linux64"
    stored = index.insertTask(path, entry(first, rank=10, data={"revision": "abc"}))
    assert check_response("index/indexed-task-response", stored) == []
    assert stored["namespace"] == path and stored["taskId"] == first and stored["rank"] == 10
    # A lower rank does not replace a higher one; the answer is still 200, with what is stored.
    assert index.insertTask(path, entry(second, rank=9))["taskId"] == first
    assert index.findTask(path)["taskId"] == first and index.findTask(path)["data"] == {"revision": "abc"}
    # Equal or higher: the newer wins.
    assert index.insertTask(path, entry(third, rank=10))["taskId"] == third
    assert index.insertTask(path, entry(second, rank=11))["taskId"] == second
    assert index.findTask(path)["taskId"] == second


def test_namespaces_and_tasks_are_listed_page_by_page(index, space):
    names = [f"task{number:02d}" for number in range(5)]
    for name in names:
        index.insertTask(f"{space}.lists.{name}", entry(new_slugid()))
    for child in ("b", "a", "c"):
        index.insertTask(f"{space}.lists.dirs.{child}.x", entry(new_slugid()))
    root = index.listNamespaces("")["namespaces"]
    assert {"namespace": space, "name": space} in [{k: n[k] for k in ("namespace", "name")} for n in root]
    assert [n["name"] for n in index.listNamespaces(space)["namespaces"]] == ["lists"]
    pages, token = [], None
    while True:
        page = index.listTasks(f"{space}.lists", query={"limit": 2, **({"continuationToken": token} if token else {})})
        assert check_response("index/list-tasks-response", page) == []
        pages.append([task["namespace"].rsplit(".", 1)[1] for task in page["tasks"]])
        token = page.get("continuationToken")
        if not token:
            break
    assert pages == [names[:2], names[2:4], names[4:]]
    listed = index.listNamespaces(f"{space}.lists.dirs", query={"limit": 2})
    assert [n["name"] for n in listed["namespaces"]] == ["a", "b"] and listed["continuationToken"]
    rest = index.listNamespaces(f"{space}.lists.dirs", query={"continuationToken": listed["continuationToken"]})
    assert [n["namespace"] for n in rest["namespaces"]] == [f"{space}.lists.dirs.c"]
    assert "continuationToken" not in rest
    assert check_response("index/list-namespaces-response", rest) == []
    with pytest.raises(taskcluster.exceptions.TaskclusterRestFailure) as refused:   # Taskcluster's code
        index.listTasks(f"{space}.lists", query={"continuationToken": "garbage!"})
    assert (refused.value.status_code, refused.value.body["code"]) == (400, "InputError")


def test_find_tasks_at_index_answers_those_found_in_order(index, space):
    ids = {name: new_slugid() for name in ("one", "two")}
    for name, task_id in ids.items():
        index.insertTask(f"{space}.many.{name}", entry(task_id))
    wanted = [f"{space}.many.two", f"{space}.many.missing", f"{space}.many.one"]
    answer = index.findTasksAtIndex({"indexes": wanted})
    assert [task["taskId"] for task in answer["tasks"]] == [ids["two"], ids["one"]]
    first = index.findTasksAtIndex(payload={"indexes": wanted}, query={"limit": 1})
    assert [task["taskId"] for task in first["tasks"]] == [ids["two"]] and first["continuationToken"]


def test_missing_expired_and_deleted_entries_are_not_found(index, space):
    assert rest_error(index.findTask, f"{space}.nothing").status_code == 404
    index.insertTask(f"{space}.old.x", entry(new_slugid(), days=-1))
    error = rest_error(index.findTask, f"{space}.old.x")
    assert error.status_code == 404 and error.body["code"] == "ResourceNotFound"
    assert index.listTasks(f"{space}.old")["tasks"] == []
    index.insertTask(f"{space}.gone.x", entry(new_slugid()))
    assert index.deleteTask(f"{space}.gone.x") == {}
    assert rest_error(index.findTask, f"{space}.gone.x").status_code == 404
    assert index.deleteTask(f"{space}.gone.x") == {}                       # gone already: fine
    # A deleted entry's namespaces stay; one whose every entry expired before today is gone too.
    assert [n["name"] for n in index.listNamespaces(space)["namespaces"]] == ["gone"]


def test_completed_tasks_are_indexed_at_their_routes_with_rank_expiry_and_data(server, queue, index, space,
                                                                                new_task, task_queue_id):
    expires = in_days(20)
    task_id = completed(queue, new_task, task_queue_id,
                        routes=[f"index.{space}.ci.latest", f"index.{space}.ci.rev-abc", "not-an-index-route"],
                        extra={"index": {"rank": 1700000000, "expires": expires, "data": {"artifact": "x"}}})
    found = eventually(lambda: _found(index, f"{space}.ci.latest"), message="the task indexed")
    assert found == {"namespace": f"{space}.ci.latest", "taskId": task_id, "rank": 1700000000,
                     "data": {"artifact": "x"}, "expires": expires}
    assert eventually(lambda: _found(index, f"{space}.ci.rev-abc"))["taskId"] == task_id   # written one by one
    # An older build (a lower rank) completing later does not replace it; defaults: rank 0,
    # the task's expires, data {}.
    older = completed(queue, new_task, task_queue_id, routes=[f"index.{space}.ci.latest", f"index.{space}.ci.old"])
    default = eventually(lambda: _found(index, f"{space}.ci.old"), message="the older task indexed")
    assert default["taskId"] == older and default["rank"] == 0 and default["data"] == {}
    assert default["expires"] == queue.task(older)["expires"]
    assert index.findTask(f"{space}.ci.latest")["taskId"] == task_id


def test_a_task_that_does_not_complete_is_not_indexed(queue, index, space, new_task, task_queue_id):
    task_id = new_slugid()
    queue.createTask(task_id, new_task(routes=[f"index.{space}.failed.x"]))
    queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    queue.reportFailed(task_id, "0")
    indexed_later = completed(queue, new_task, task_queue_id, routes=[f"index.{space}.failed.y"])
    eventually(lambda: _found(index, f"{space}.failed.y"), message="the completed one indexed")
    assert index.findTask(f"{space}.failed.y")["taskId"] == indexed_later
    assert rest_error(index.findTask, f"{space}.failed.x").status_code == 404


def _found(index, path: str) -> dict | None:
    try:
        return index.findTask(path)
    except taskcluster.TaskclusterRestFailure:
        return None


def test_find_artifact_redirects_to_a_public_artifact_without_signing(server, queue, index, space, new_task,
                                                                      task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    create_and_upload(server, queue, task_id, "public/build/target.tar", b"the build")
    index.insertTask(f"{space}.art.latest", entry(task_id))
    url = index.buildUrl("findArtifactFromTask", f"{space}.art.latest", "public/build/target.tar")
    answer = requests.get(url, allow_redirects=False)   # no credentials: the artifact is public
    assert answer.status_code == 303
    assert answer.headers["Location"] == \
        f"{server.root_url}/api/queue/v1/task/{task_id}/artifacts/public%2Fbuild%2Ftarget.tar"
    assert "bewit" not in answer.headers["Location"]
    assert requests.get(url).content == b"the build"     # followed through the Queue to the bytes
    assert index_client(server, None).findArtifactFromTask(f"{space}.art.latest", "public/build/target.tar")["url"] \
        == answer.headers["Location"]


def test_find_artifact_signs_the_redirect_to_a_private_artifact_for_a_caller_allowed_it(
        server, queue, index, space, new_task, task_id, task_queue_id):
    queue.createTask(task_id, new_task())
    queue.claimWork(task_queue_id, {"workerGroup": "wg", "workerId": "w1", "tasks": 1})
    create_and_upload(server, queue, task_id, "private/keys.txt", b"private bytes")
    index.insertTask(f"{space}.priv.latest", entry(task_id))
    # Without `queue:get-artifact:private/keys.txt`: refused, as Taskcluster refuses it.
    refused = rest_error(index_client(server, None).findArtifactFromTask, f"{space}.priv.latest", "private/keys.txt")
    assert refused.status_code == 403 and refused.body["code"] == "InsufficientScopes"
    allowed = temporary(ROOT_CREDENTIALS, ["queue:get-artifact:private/*"])
    signed = index_client(server, allowed).buildSignedUrl("findArtifactFromTask", f"{space}.priv.latest",
                                                          "private/keys.txt")
    answer = requests.get(signed, allow_redirects=False)
    assert answer.status_code == 303 and "bewit=" in answer.headers["Location"]
    assert requests.get(answer.headers["Location"]).content == b"private bytes"
    assert rest_error(index.findArtifactFromTask, f"{space}.nothing.here", "private/keys.txt").status_code == 404


def test_scopes_are_taskclusters(server, index, space):
    writer = temporary(ROOT_CREDENTIALS, [f"index:insert-task:{space}.mine.*", f"index:delete-task:{space}.mine.*"])
    mine = index_client(server, writer)
    assert mine.insertTask(f"{space}.mine.x", entry(new_slugid()))["namespace"] == f"{space}.mine.x"
    refused = rest_error(mine.insertTask, f"{space}.theirs.x", entry(new_slugid()))
    assert refused.status_code == 403 and f"index:insert-task:{space}.theirs.x" in refused.body["message"]
    assert rest_error(mine.deleteTask, f"{space}.theirs.x").status_code == 403
    assert mine.deleteTask(f"{space}.mine.x") == {}
    # Reading is for everyone, as Taskcluster's anonymous role allows it.
    anonymous = index_client(server, None)
    anonymous.listNamespaces(space) and anonymous.listTasks(space)
    assert rest_error(anonymous.insertTask, f"{space}.any", entry(new_slugid())).status_code == 403
    assert as_client(server, None).ping()["alive"]


@pytest.mark.parametrize("path, body, field", [
    ("a..b", None, "namespace"),
    ("ok.path", {"rank": "high"}, "rank"),
    ("ok.path", {"taskId": "not-a-slugid"}, "taskId"),
    ("ok.path", {"expires": "tomorrow"}, "expires"),
    ("ok.path", {"data": {"big": "x" * 40_000}}, "data"),
    ("x" * 256, None, "namespace"),
])
def test_bad_input_is_400_naming_the_field(index, path, body, field):
    error = rest_error(index.insertTask, path, {**entry(new_slugid()), **(body or {})})
    assert error.status_code == 400 and field in error.body["message"], error.body


def test_the_openapi_document_lists_every_operation(server):
    document = requests.get(f"{server.root_url}/api/index/v1/openapi.json").json()
    operations = {op["operationId"] for path in document["paths"].values() for op in path.values()}
    assert {"findTask", "findTasksAtIndex", "listNamespaces", "listTasks", "insertTask", "deleteTask",
            "findArtifactFromTask", "ping"} <= operations
