"""A hook's triggerSchema: it must be a JSON schema, and a payload that breaks it is refused
naming each field."""

import pytest

from shared.domain.errors import InvalidInput
from shared.domain.hooks import DEFAULT_TRIGGER_SCHEMA
from shared.services.hooks.trigger_schema import check_trigger_payload, check_trigger_schema

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["branch"],
          "properties": {"branch": {"type": "string", "pattern": "^[a-z]+$"},
                         "when": {"type": "string", "format": "date-time"},
                         "targets": {"type": "array", "items": {"type": "integer", "minimum": 1}}}}


def test_a_good_payload_passes():
    check_trigger_payload(SCHEMA, {"branch": "main", "when": "2026-01-01T00:00:00Z", "targets": [1, 2]})


def test_a_bad_payload_is_refused_naming_every_field():
    with pytest.raises(InvalidInput) as refused:
        check_trigger_payload(SCHEMA, {"branch": "main\n", "when": "yesterday", "targets": [1, 0], "extra": 1})
    lines = refused.value.message.splitlines()
    assert [line.split(":")[0] for line in lines] == ["payload", "payload.branch", "payload.targets[1]",
                                                     "payload.when"]
    assert "'extra' was unexpected" in lines[0] and "is less than the minimum" in lines[2]
    with pytest.raises(InvalidInput, match="^payload: 'branch' is a required property"):
        check_trigger_payload(SCHEMA, {})


def test_the_default_schema_takes_only_an_empty_object():
    check_trigger_payload(DEFAULT_TRIGGER_SCHEMA, {})
    with pytest.raises(InvalidInput, match="^payload: Additional properties are not allowed"):
        check_trigger_payload(DEFAULT_TRIGGER_SCHEMA, {"a": 1})
    with pytest.raises(InvalidInput, match="^payload: .* is not of type 'object'"):
        check_trigger_payload(DEFAULT_TRIGGER_SCHEMA, [])


def test_a_trigger_schema_must_be_a_json_schema():
    assert check_trigger_schema(SCHEMA) is SCHEMA
    with pytest.raises(InvalidInput, match=r"^triggerSchema\.type: is not a valid JSON schema"):
        check_trigger_schema({"type": "thing"})
    with pytest.raises(InvalidInput, match="^triggerSchema: must be an object"):
        check_trigger_schema([])
