"""The index, hooks and secrets schemas (schemas/v1/<service>/, adapted from Taskcluster's):
each loads, good bodies pass, bad ones are refused naming the field, and what our domain
renders conforms to the response schemas."""

import json

import pytest

from shared.domain.errors import InvalidInput
from shared.domain.index import IndexEntry, Namespace
from shared.validation import SCHEMA_DIR, check_response, validate, violations
from tests.reference import REFERENCE

TASK_ID = "fN1SbArXTPSVFNUvaOlinQ"
SERVICES = ("index", "hooks", "secrets")
HOOK = {"metadata": {"name": "nightly", "description": "builds at night", "owner": "ci@example.com",
                     "emailOnError": False},
        "task": {"$if": "firedBy == 'schedule'", "then": {"payload": {}}},
        "schedule": ["0 0 3 * * *"], "triggerSchema": {"type": "object"},
        "bindings": [{"exchange": "exchange/taskcluster-queue/v1/task-completed", "routingKeyPattern": "#"}]}


def names() -> list[str]:
    return sorted(path.relative_to(SCHEMA_DIR).as_posix().removesuffix(".json")
                  for service in SERVICES for path in (SCHEMA_DIR / service).glob("*.json"))


@pytest.mark.parametrize("name", names())
def test_each_schema_loads_and_is_one_of_taskclusters(name):
    service, schema = name.split("/")
    assert (REFERENCE / f"{service}-schemas-json" / f"{schema}.json").exists()
    assert json.loads((SCHEMA_DIR / f"{name}.json").read_text())["$id"].endswith(f"/{name}.json")
    violations(name, {})                              # compiles, its $refs resolve


@pytest.mark.parametrize("name, body", [
    ("index/insert-task-request", {"taskId": TASK_ID, "rank": 3.5, "data": {"a": 1}, "expires": "2030-01-01T00:00:00Z"}),
    ("index/list-tasks-at-index", {"indexes": ["a.b", "c"]}),
    ("hooks/create-hook-request", HOOK),
    ("hooks/create-hook-request", {"hookGroupId": "g", "hookId": "a/b", "metadata": HOOK["metadata"], "task": {}}),
    ("hooks/trigger-hook", {"anything": [1]}),
    ("secrets/secret", {"secret": {"password": "x"}, "expires": "2030-01-01T00:00:00.000Z"}),
])
def test_good_requests_pass(name, body):
    validate(name, body)


@pytest.mark.parametrize("name, body, field", [
    ("index/insert-task-request", {"taskId": "nope", "rank": 1, "data": {}, "expires": "2030-01-01T00:00:00Z"},
     "taskId"),
    ("index/insert-task-request", {"taskId": TASK_ID, "rank": "1", "data": {}, "expires": "2030-01-01T00:00:00Z"},
     "rank"),
    ("index/insert-task-request", {"taskId": TASK_ID, "rank": 1, "data": {}, "expires": "soon"}, "expires"),
    ("index/insert-task-request", {"taskId": TASK_ID, "rank": 1, "expires": "2030-01-01T00:00:00Z"}, "(root)"),
    ("index/list-tasks-at-index", {"indexes": [3]}, "indexes[0]"),
    ("hooks/create-hook-request", {**HOOK, "schedule": ["@daily", "@daily"]}, "schedule"),
    ("hooks/create-hook-request", {**HOOK, "hookId": "a b"}, "hookId"),
    ("hooks/create-hook-request", {**HOOK, "metadata": {**HOOK["metadata"], "owner": "nobody"}}, "metadata.owner"),
    ("hooks/create-hook-request", {**HOOK, "bindings": [{"exchange": ""}]}, "bindings[0]"),
    ("hooks/create-hook-request", {**HOOK, "triggerSchema": []}, "triggerSchema"),
    ("hooks/create-hook-request", {**HOOK, "extra": 1}, "(root)"),
    ("secrets/secret", {"secret": "text", "expires": "2030-01-01T00:00:00.000Z"}, "secret"),
    ("secrets/secret", {"secret": {}}, "(root)"),
])
def test_bad_requests_are_refused_naming_the_field(name, body, field):
    with pytest.raises(InvalidInput) as refused:
        validate(name, body)
    assert any(line.startswith(f"{field}:") for line in refused.value.message.splitlines()), refused.value.message


def test_what_the_domain_renders_conforms_to_the_responses():
    entry = IndexEntry("a.b.c", TASK_ID, 7, {"rev": "x"}, "2030-01-01T00:00:00.000Z")
    assert check_response("index/indexed-task-response", entry.to_json()) == []
    assert check_response("index/list-tasks-response", {"tasks": [entry.to_json()], "continuationToken": "c"}) == []
    namespace = Namespace("a.b", "2030-01-02T00:00:00.000Z")
    assert check_response("index/list-namespaces-response", {"namespaces": [namespace.to_json()]}) == []
    assert check_response("hooks/trigger-hook-response", {"taskId": TASK_ID, "status": {"taskId": TASK_ID}}) == []
    assert check_response("hooks/trigger-hook-response", {}) == []
    assert check_response("hooks/hook-definition", {**HOOK, "hookGroupId": "g", "hookId": "h"}) == []
    assert check_response("secrets/secret-list", {"secrets": ["a", "b"]}) == []
