"""The two validators of shared/validation.py agree: a body the compiled one (jsonschema-rs)
accepts, and which is therefore never looked at again, is one jsonschema finds no fault in;
and what it refuses, jsonschema words."""

import copy

import pytest
from hypothesis import given, settings, strategies as st

from shared import validation
from shared.domain.errors import InvalidInput
from shared.validation import SCHEMA_DIR

TASK_ID = "fN1SbArXTPSVFNUvaOlinQ"
TASK = {
    "taskQueueId": "prov/worker", "schedulerId": "-", "taskGroupId": TASK_ID, "dependencies": [TASK_ID],
    "requires": "all-completed", "routes": ["index.a.b"], "priority": "lowest", "retries": 5,
    "created": "2030-01-01T00:00:00.000Z", "deadline": "2030-01-01T01:00:00.000Z",
    "expires": "2030-02-01T00:00:00Z", "scopes": ["queue:x"], "payload": {"command": [["true"]]},
    "metadata": {"name": "n", "description": "d", "owner": "me@example.com", "source": "https://example.com/"},
    "tags": {"a": "b"}, "extra": {"k": [1, 2.5, None]},
}
# Where the two could part: patterns with ECMA's `$` and ASCII classes, time stamps only
# Python represents, integers written as floats or booleans, unique items, sizes in code points.
EDGES = [
    ("taskQueueId", "prov/worker\n"), ("taskGroupId", TASK_ID + "\n"), ("taskQueueId", "prov/w\u0661"),
    ("deadline", "2030-01-01T01:00:00"), ("deadline", "0000-01-01T00:00:00Z"), ("deadline", "10000-01-01T00:00:00Z"),
    ("deadline", "2030-02-30T00:00:00Z"), ("deadline", "2030-01-01T25:00:00Z"), ("deadline", 1),
    ("retries", 1.0), ("retries", True), ("retries", 5.5), ("retries", -1), ("retries", 2 ** 70),
    ("routes", ["a", "a"]), ("dependencies", [TASK_ID, TASK_ID]), ("scopes", ["\U0001F600" * 3]),
    ("priority", "urgent"), ("requires", None), ("tags", {"a": 1}), ("metadata", {"name": "n"}),
    ("schedulerId", ""), ("schedulerId", "s" * 39), ("payload", []), ("extra", "x"), ("unknown", 1),
]


def agree(name: str, body) -> None:
    fast = validation._fast_validator(name).is_valid(body)
    slow = list(validation._validator(name).iter_errors(body))
    assert fast == (not slow), (name, body, [error.message for error in slow])


def test_a_valid_task_passes_both():
    agree("create-task-request", TASK)
    assert validation.violations("create-task-request", TASK) == []


@pytest.mark.parametrize("field, value", EDGES)
def test_they_agree_where_they_could_part(field, value):
    agree("create-task-request", {**TASK, field: value})


def test_a_refusal_is_worded_by_jsonschema_naming_the_field():
    with pytest.raises(InvalidInput) as refused:
        validation.validate("create-task-request", {**TASK, "retries": "five"})
    assert refused.value.message.startswith("retries: 'five' is not of type 'integer'")


@pytest.mark.parametrize("path", sorted(SCHEMA_DIR.rglob("*.json")), ids=lambda path: path.name)
def test_every_schema_compiles_for_both_and_they_agree_on_an_empty_body(path):
    name = path.relative_to(SCHEMA_DIR).as_posix().removesuffix(".json")
    for body in ({}, [], None, "x"):
        agree(name, body)


values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(TASK) + ["metadata.name", "metadata.owner", "payload.command"]),
                          st.one_of(values, st.sampled_from([value for _, value in EDGES]))), min_size=1, max_size=3))
def test_a_task_changed_at_random_gets_one_verdict_from_both(changes):
    body = copy.deepcopy(TASK)
    for path, value in changes:
        *parents, last = path.split(".")
        target = body
        for parent in parents:   # a parent replaced by a value before is made an object again
            if not isinstance(target.get(parent), dict):
                target[parent] = {}
            target = target[parent]
        target[last] = value
    agree("create-task-request", body)
