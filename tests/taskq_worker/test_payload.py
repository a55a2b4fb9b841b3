"""generic-worker payloads: what is run, and what is refused before anything runs."""

import re

import pytest

from taskq_worker.payload import ArtifactSpec, MalformedPayload, parse


def test_a_full_payload():
    payload = parse({"command": [["echo", "hi"], ["true"]], "env": {"A": "1"}, "maxRunTime": 30,
                     "artifacts": [{"type": "file", "path": "out/a.txt", "name": "public/a.txt"},
                                   {"type": "directory", "path": "out"}],
                     "features": {"taskclusterProxy": True}})
    assert payload.commands == [["echo", "hi"], ["true"]] and payload.env == {"A": "1"}
    assert payload.max_run_time == 30 and payload.ignored == ["features"]
    assert payload.artifacts == [ArtifactSpec("file", "out/a.txt", "public/a.txt"),
                                 ArtifactSpec("directory", "out", "out")]


@pytest.mark.parametrize("payload, reason", [
    ({}, "payload.command is missing"),
    ({"command": "echo hi"}, "non-empty list of commands"),
    ({"command": ["echo", "hi"]}, "payload.command[0] must be a non-empty list of strings"),
    ({"command": [[]]}, "payload.command[0]"),
    ({"command": [["echo"]], "env": {"A": "a", "B": 1}}, "payload.env.B must be a string (quote it: \"1\"), got 1"),
    ({"command": [["echo"]], "env": ["A=1"]}, "payload.env must map names to strings, got ['A=1']"),
    ({"command": [["echo"]], "maxRunTime": "60"}, "payload.maxRunTime"),
    ({"command": [["echo"]], "maxRunTime": 0}, "payload.maxRunTime"),
    ({"command": [["echo"]], "artifacts": [{"type": "tarball", "path": "x"}]}, "payload.artifacts[0].type"),
    ({"command": [["echo"]], "artifacts": [{"type": "file"}]}, "payload.artifacts[0].path"),
    ({"command": [["echo"]], "image": "ubuntu"}, "keys this worker does not know: image"),
    (["echo"], "the payload must be an object"),
])
def test_what_cannot_be_parsed_is_refused_with_its_reason(payload, reason):
    with pytest.raises(MalformedPayload, match=re.escape(reason)):
        parse(payload)
