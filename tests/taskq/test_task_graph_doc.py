"""docs/task-graphs.md's examples, run as written against a local Queue: the YAML graph through
`taskq submit-graph`, the Python one through the official client's createApiClient."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from taskq.scheduler import Scheduler
from tests.conftest import ROOT

DOC = (ROOT / "docs" / "task-graphs.md").read_text()


def _block(language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", DOC, re.S).group(1)


def test_the_yaml_graph_is_submitted_and_its_substitution_and_routing_applied(taskq, server, tmp_path, task_queue_id):
    graph = tmp_path / "graph.yml"
    graph.write_text(_block("yaml").replace("proj/linux", task_queue_id))
    submitted = taskq("submit-graph", str(graph))
    assert submitted.status == 0, submitted.stderr
    graph_id = submitted.stdout.strip()
    scheduler = Scheduler({"rootUrl": server.root_url, "credentials": server.credentials})
    labels = {node["label"]: node for node in scheduler.inspectTaskGraph(graph_id)["tasks"]}
    assert labels["test"]["requires"] == ["build"] and labels["test"]["reruns"] == 2
    queue = server.client()
    ship = queue.task(labels["ship"]["taskId"])
    assert ship["payload"]["env"] == {"BUILD_TASK": labels["build"]["taskId"]}
    assert ship["routes"] == ["nightly"] and ship["metadata"]["name"] == "ship"
    assert ship["dependencies"] == [labels["test"]["taskId"]]


def test_the_python_example_runs_as_written(server, tmp_path):
    script = tmp_path / "graph.py"
    script.write_text(_block("python"))
    environment = {**os.environ, "TASKCLUSTER_ROOT_URL": server.root_url,
                   "TASKCLUSTER_CLIENT_ID": server.credentials["clientId"],
                   "TASKCLUSTER_ACCESS_TOKEN": server.credentials["accessToken"]}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "running"
    states = {line.split()[0]: line.split()[2] for line in lines[1:]}
    assert states == {"build": "pending", "test": "unscheduled", "ship": "unscheduled"}
