"""Taskcluster's own schemas (`../shared/reference/taskcluster`, beside the checkout), for
checking that what we send conforms to what Taskcluster's clients expect."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from jsonschema import Draft7Validator

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "taskcluster"
SCHEMAS = REFERENCE / "schemas-json"


@lru_cache(maxsize=None)
def reference_schema(name: str) -> dict:
    """The schema `name` (e.g. 'task-pending-message') with its `$ref`s to sibling schemas
    inlined, so any validator reads it."""
    return _inline(json.loads((SCHEMAS / f"{name}.json").read_text()))


def _inline(node):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            file, _, pointer = ref.partition("#")
            target = reference_schema(Path(file).name.removesuffix(".json"))
            for part in filter(None, pointer.split("/")):
                target = target[part]
            return target
        return {key: _inline(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value) for value in node]
    return node


def schema_errors(name: str, body: dict) -> list[str]:
    return [f"{list(error.path)}: {error.message}" for error in Draft7Validator(reference_schema(name)).iter_errors(body)]
