"""No input produces a 5xx (issue R5).

Every operation of the APIs (queue, scheduler, object, hooks, index, secrets, worker manager) is fuzzed from the
OpenAPI document the server itself serves (valid and invalid bodies, queries and path
parameters, including values that break the parameters' patterns); then hostile task graphs
and hostile artifacts. Bounded and derandomized, so CI is repeatable: a 5xx found here is
found again on the next run.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import quote

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig

from devhost.azurite import Azurite
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.functions.http_bindings import METHODS
from tests.conftest import make_task, start_server

EXAMPLES_PER_OPERATION = 15
FUZZ_CONFIG = {
    "seed": 20261124,
    "generation": {"mode": "all", "max-examples": EXAMPLES_PER_OPERATION, "deterministic": True},
    # Other methods never reach the app: the host answers them (the local one with a 501).
    # OPTIONS is a browser's preflight, answered 200 for every served path (tests/api/test_cors.py).
    "phases": {"coverage": {"unexpected-methods": [method for method in METHODS if method != "OPTIONS"]},
               "stateful": {"enabled": False}},
}


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    """A server of its own, whose claimWork answers at once instead of long-polling, on an
    Azurite of its own (the rows the rest of the suite leaves slow Azurite down: `own_azurite`)."""
    with Azurite() as azurite:
        server = start_server(azurite, tmp_path_factory.mktemp("fuzz"), CLAIM_WORK_WAIT_SECONDS="0")
        yield server
        server.stop()


def _openapi(server, api: str):
    base = f"{server.root_url}/api/{api}/v1"
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json", config=SchemathesisConfig.from_dict(FUZZ_CONFIG))
    schema.config.update(base_url=base)
    return schema


@pytest.fixture(scope="module")
def queue_openapi(fuzz_server):
    return _openapi(fuzz_server, "queue")


@pytest.fixture(scope="module")
def scheduler_openapi(fuzz_server):
    return _openapi(fuzz_server, "scheduler")


@pytest.fixture(scope="module")
def object_openapi(fuzz_server):
    return _openapi(fuzz_server, "object")


@pytest.fixture(scope="module")
def hooks_openapi(fuzz_server):
    return _openapi(fuzz_server, "hooks")


@pytest.fixture(scope="module")
def index_openapi(fuzz_server):
    return _openapi(fuzz_server, "index")


@pytest.fixture(scope="module")
def secrets_openapi(fuzz_server):
    return _openapi(fuzz_server, "secrets")


@pytest.fixture(scope="module")
def worker_manager_openapi(fuzz_server):
    return _openapi(fuzz_server, "worker-manager")


@pytest.fixture(scope="module")
def auth_openapi(fuzz_server):
    return _openapi(fuzz_server, "auth")


def check(case, auth) -> None:
    """No 5xx; a 4xx in Taskcluster's error shape; a 200 in the operation's output schema.
    Signed by the root client, so that every call reaches its handler."""
    response = case.call(timeout=30, auth=auth)
    request = f"{response.request.method} {response.request.url}\n{(response.request.body or b'')[:500]!r}"
    assert response.status_code < 500, f"{request}\n-> {response.status_code} {response.text[:500]}"
    if response.status_code >= 400:
        body = response.json()
        assert body["code"] and body["message"], f"{request}\n-> {response.text[:500]}"
    else:
        case.operation.validate_response(response)


@pytest.fixture(autouse=True)
def _node_id_for_schemathesis(request):
    """schemathesis 4.32 reads and rewrites `Node._nodeid`, which pytest 9.2 no longer has
    (its node id is `_id`): give it the attribute it expects."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


queue_api = schemathesis.pytest.from_fixture("queue_openapi")
scheduler_api = schemathesis.pytest.from_fixture("scheduler_openapi")
object_api = schemathesis.pytest.from_fixture("object_openapi")
hooks_api = schemathesis.pytest.from_fixture("hooks_openapi")
index_api = schemathesis.pytest.from_fixture("index_openapi")
secrets_api = schemathesis.pytest.from_fixture("secrets_openapi")
worker_manager_api = schemathesis.pytest.from_fixture("worker_manager_openapi")
auth_api = schemathesis.pytest.from_fixture("auth_openapi")


@queue_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.slow
def test_queue_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@scheduler_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_scheduler_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@object_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_object_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@hooks_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_hooks_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@index_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_index_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@secrets_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_secrets_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@worker_manager_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_worker_manager_api(case, fuzz_server):
    check(case, fuzz_server.auth)


@auth_api.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_auth_api(case, fuzz_server):
    check(case, fuzz_server.auth)


def test_the_documents_stand_alone(fuzz_server):
    """Every `$ref` points inside the document, and every path parameter has its pattern."""
    for api in ("queue", "scheduler", "object", "hooks", "index", "secrets", "worker-manager", "auth"):
        document = requests.get(f"{fuzz_server.root_url}/api/{api}/v1/openapi.json").json()
        text = json.dumps(document)
        assert document["openapi"] == "3.1.0" and '"$ref": "#/components/schemas/' in text
        assert all(ref.startswith("#/components/schemas/") for ref in re.findall(r'"\$ref": "([^"]*)"', text))
        for operations in document["paths"].values():
            for operation in operations.values():
                assert all(p["schema"].get("pattern") for p in operation["parameters"] if p["in"] == "path")


# Hostile task graphs: a well-formed graph of up to four tasks (whose requires may form
# cycles) with one defect drawn from DEFECTS, so that every rule is reached, the schema's
# and the graph's own.
GRAPH_QUEUE = "fuzz-graphs/worker"
LABELS = ["a", "b", "c", "d"]
ODD_CHARACTERS = "ab09_.:@+-" + "\n\t /\\#?%'\"\u00e9\U0001f4a5\x00\x7f"
# A valid value plus a final newline passes a Python `$`: the cause of issue R5's first 5xx.
odd_text = st.one_of(st.sampled_from(LABELS).map("{}\n".format), st.text(ODD_CHARACTERS, max_size=12),
                     st.just("x" * 129))
odd_values = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.floats(allow_nan=False),
                       odd_text, st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def _odd_label(draw, graph, label):
    graph["tasks"][draw(odd_text)] = graph["tasks"].pop(label)


def _odd_requires(draw, graph, label):
    graph["tasks"][label]["requires"] = draw(st.one_of(st.lists(st.one_of(odd_text, st.just("unknown")), min_size=1),
                                                       st.just([label, label]), odd_values))


def _self_cycle(draw, graph, label):
    graph["tasks"][label]["requires"] = [label]


def _odd_subs(draw, graph, label):
    target = {"$subs": draw(st.one_of(odd_values, odd_text.map("taskId:{}".format), st.just("taskId:")))}
    task = graph["tasks"][label]["task"]
    where = draw(st.sampled_from(["payload", "dependencies", "taskQueueId", "taskGroupId", "created"]))
    task[where] = {"deps": target} if where == "payload" else [target] if where == "dependencies" else target


def _odd_reruns(draw, graph, label):
    huge = st.sampled_from([2 ** 64, 10 ** 400])
    graph["tasks"][label]["reruns"] = draw(st.one_of(st.integers(-3, 60), huge, odd_values))


def _odd_routing(draw, graph, label):
    graph["routing"] = draw(st.one_of(odd_text, odd_values))


def _odd_node(draw, graph, label):
    graph["tasks"][label] = draw(st.one_of(odd_values, odd_values.map(lambda task: {"task": task}),
                                           st.just({"task": {}, "extra": 1})))


def _odd_tasks(draw, graph, label):
    graph["tasks"] = draw(st.one_of(odd_values, st.just({})))


DEFECTS = [None, _odd_label, _odd_requires, _self_cycle, _odd_subs, _odd_reruns, _odd_routing, _odd_node, _odd_tasks]


@st.composite
def graphs(draw) -> dict:
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=4, unique=True))
    graph = {"tasks": {label: {"task": make_task(GRAPH_QUEUE)} for label in labels}}
    for label in labels:
        if draw(st.booleans()):
            graph["tasks"][label]["requires"] = draw(st.lists(st.sampled_from(labels), max_size=2, unique=True))
        if draw(st.booleans()):  # a well-formed placeholder: the taskId of another label
            graph["tasks"][label]["task"]["payload"] = {"after": {"$subs": f"taskId:{draw(st.sampled_from(labels))}"}}
    defect = draw(st.sampled_from(DEFECTS))
    if defect:
        defect(draw, graph, draw(st.sampled_from(labels)))
    return graph


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(graph=graphs())
def test_hostile_task_graphs(fuzz_server, graph):
    url = f"{fuzz_server.root_url}/api/scheduler/v1/task-graph/{new_slugid()}"
    response = requests.put(url, data=json.dumps(graph), timeout=60, auth=fuzz_server.auth)
    assert response.status_code < 500, (graph, response.text[:500])
    if response.status_code >= 400:
        assert {"code", "message", "requestInfo"} <= set(response.json()), response.text[:500]
        assert requests.get(f"{url}/status", auth=fuzz_server.auth).status_code == 404, \
            (graph, "a refused graph left a trace")


# Hostile artifacts, on a run that takes them (the document's fuzzing stops at "no such task").
ARTIFACT_QUEUE = "fuzz-artifacts/worker"
odd_names = st.one_of(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), min_size=1, max_size=40),
                      odd_text, st.just("x" * 1025), st.sampled_from(["public/../a", "a//b", "/", "public/a/"]))
artifact_bodies = st.fixed_dictionaries({"storageType": st.sampled_from(["object", "s3", "reference", "link", "error",
                                                                         "nope"])}, optional={
    "contentType": st.one_of(st.sampled_from(["text/plain", "a/b; c=d", "text", ""]), odd_text),
    "expires": st.one_of(st.sampled_from([to_iso(utcnow() + timedelta(hours=1)), "2000-01-01T00:00:00Z",
                                          "9999-12-31T23:59:59Z", "soon"]), odd_values),
    "url": st.one_of(st.sampled_from(["https://example.com/x", "javascript:alert(1)", "http://a b"]), odd_text),
    "artifact": st.one_of(odd_names, odd_values),
    "reason": st.sampled_from(["file-missing-on-worker", "other"]),
    "message": st.one_of(odd_text, st.just("m" * 5000)),
    "contentLength": st.one_of(st.integers(-1, 2 ** 60), odd_values),
})


@pytest.fixture(scope="module")
def artifact_run(fuzz_server):
    queue = fuzz_server.client()
    task_id = new_slugid()
    queue.createTask(task_id, make_task(ARTIFACT_QUEUE))
    queue.claimWork(ARTIFACT_QUEUE, {"workerGroup": "fuzz", "workerId": "fuzz", "tasks": 1})
    return f"{fuzz_server.root_url}/api/queue/v1/task/{task_id}/runs/0"


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(name=odd_names, body=artifact_bodies)
def test_hostile_artifacts(artifact_run, fuzz_server, name, body):
    encoded = quote(name, safe="")
    response = requests.post(f"{artifact_run}/artifacts/{encoded}", data=json.dumps(body), timeout=60,
                             auth=fuzz_server.auth)
    assert response.status_code < 500, (name, body, response.text[:500])
    if response.status_code >= 400:
        assert {"code", "message", "requestInfo"} <= set(response.json()), response.text[:500]
    for read in ("artifacts", "artifact-content", "artifact-info"):
        answer = requests.get(f"{artifact_run}/{read}/{encoded}", allow_redirects=False, timeout=60,
                              auth=fuzz_server.auth)
        assert answer.status_code < 500, (read, name, body, answer.text[:500])
