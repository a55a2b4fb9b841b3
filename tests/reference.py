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
def reference_schema(name: str, folder: str = SCHEMAS.name) -> dict:
    """The schema `name` (e.g. 'task-pending-message') with its `$ref`s to sibling schemas
    inlined, so any validator reads it. `folder`: another service's schemas, e.g.
    'worker-manager-schemas-json'."""
    return _inline(json.loads((REFERENCE / folder / f"{name}.json").read_text()), folder)


def _inline(node, folder: str):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            file, _, pointer = ref.partition("#")
            target = reference_schema(Path(file).name.removesuffix(".json"), folder)
            for part in filter(None, pointer.split("/")):
                target = target[part]
            return target
        return {key: _inline(value, folder) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value, folder) for value in node]
    return node


def schema_errors(name: str, body: dict, folder: str = SCHEMAS.name) -> list[str]:
    validator = Draft7Validator(reference_schema(name, folder))
    return [f"{list(error.path)}: {error.message}" for error in validator.iter_errors(body)]
