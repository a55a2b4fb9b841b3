"""`taskq secrets get|set|list` through a real local host: values in from a file or stdin,
out only from `get`; errors one line, never quoting a value."""

from __future__ import annotations

import json

from shared.domain.ids import new_slugid


def test_set_get_and_list(taskq, tmp_path):
    name = f"cli/{new_slugid()[:8]}/token"
    value = tmp_path / "value.json"
    value.write_text('{"token": "from-a-file"}')
    done = taskq("secrets", "set", name, "--file", str(value), "--expires", "2 days")
    assert done.status == 0, done.stderr
    assert done.stdout == "" and "from-a-file" not in done.stderr
    got = taskq("secrets", "get", name)
    assert got.status == 0 and json.loads(got.stdout) == {"token": "from-a-file"} and "expires" in got.stderr
    assert taskq("secrets", "get", name, "--json").json()["secret"] == {"token": "from-a-file"}
    again = taskq("secrets", "set", name, "--value", '{"token": "inline"}', "--expires", "2030-01-01T00:00:00Z",
                  "--json")
    assert again.status == 0 and again.json() == {"name": name, "expires": "2030-01-01T00:00:00.000Z"}
    assert name in taskq("secrets", "list").stdout.splitlines()
    assert name in taskq("secrets", "list", "--json").json()["secrets"]


def test_stdin_and_errors_are_one_line_without_the_value(taskq):
    name = f"cli/{new_slugid()[:8]}/stdin"
    piped = taskq("secrets", "set", name, "--file", "-", "--expires", "1 day", stdin='{"piped": true}')
    assert piped.status == 0, piped.stderr
    assert taskq("secrets", "get", name, "--json").json()["secret"] == {"piped": True}
    for args, code in ((("--value", "not json at all hunter2"), "is not JSON"),
                       (("--value", '"just-a-string-hunter2"'), "must be a JSON object"),
                       (("--value", "{}", "--expires", "whenever"), "--expires")):
        failed = taskq("secrets", "set", name, *args, *(() if "--expires" in args else ("--expires", "1 day")))
        assert failed.status == 1 and code in failed.stderr, failed.stderr
        assert "hunter2" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    missing = taskq("secrets", "get", f"cli/{new_slugid()}")
    assert missing.status == 1 and missing.stderr.startswith("error: ResourceNotFound: ")
    refused = taskq("secrets", "get", name, env={"TASKCLUSTER_CLIENT_ID": "", "TASKCLUSTER_ACCESS_TOKEN": ""})
    assert refused.status == 1 and refused.stderr.startswith("error: InsufficientScopes: ")
    assert len(refused.stderr.strip().splitlines()) == 1
