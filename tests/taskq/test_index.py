"""`taskq index find` and `taskq index list` through a real local host."""

from __future__ import annotations

from datetime import timedelta

import taskcluster

from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import ROOT_CREDENTIALS


def test_find_and_list_for_people_and_scripts(taskq, server):
    space = f"cli{new_slugid()[:8].lower().replace('-', 'x').replace('_', 'y')}"
    index = taskcluster.Index({"rootUrl": server.root_url, "credentials": dict(ROOT_CREDENTIALS)})
    task_id, expires = new_slugid(), to_iso(utcnow() + timedelta(days=3))
    index.insertTask(f"{space}.builds.linux", {"taskId": task_id, "rank": 7, "data": {}, "expires": expires})
    index.insertTask(f"{space}.builds.mac.arm", {"taskId": new_slugid(), "rank": 0, "data": {}, "expires": expires})
    found = taskq("index", "find", f"{space}.builds.linux")
    assert found.status == 0, found.stderr
    assert found.stdout.strip() == f"{task_id}  {space}.builds.linux  rank 7  expires {expires}"
    assert taskq("index", "find", f"{space}.builds.linux", "--json").json()["taskId"] == task_id
    listed = taskq("index", "list", f"{space}.builds")
    assert listed.status == 0 and listed.stdout.splitlines() == [
        f"{space}.builds.mac.", f"{space}.builds.linux  {task_id}  rank 7  expires {expires}"]
    as_json = taskq("index", "list", f"{space}.builds", "--json").json()
    assert [n["name"] for n in as_json["namespaces"]] == ["mac"] and len(as_json["tasks"]) == 1
    assert f"{space}." in taskq("index", "list").stdout.splitlines()   # the root by default


def test_errors_are_one_line(taskq):
    missing = taskq("index", "find", "no.such.path.here")
    assert missing.status == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: ResourceNotFound: ") and len(missing.stderr.strip().splitlines()) == 1
    invalid = taskq("index", "find", "not..valid")
    assert invalid.status == 1 and invalid.stderr.startswith("error: InvalidRequestArguments: ")
    assert "Traceback" not in invalid.stderr and len(invalid.stderr.strip().splitlines()) == 1
