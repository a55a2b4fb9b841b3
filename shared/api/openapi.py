"""An OpenAPI 3.1 document made from the API's own declaration: the endpoint lists, the
route parameters' patterns, the query options and the JSON schemas in `schemas/v1`.

The schemas reference each other by `$id` (`common.json#/$defs/slugid`, or from a service's
folder `../common.json#/...`); the document carries each one reached from an endpoint under
`components/schemas/<name>` (`worker-manager.worker-full` for `worker-manager/worker-full`),
its references rewritten to point there, so it stands alone.
"""

from __future__ import annotations

import json
from urllib.parse import urljoin

from shared.validation import BASE_URI, SCHEMA_DIR
from shared.api import scopes
from shared.api.dispatch import QUERY_OPTIONS
from shared.api.router import PARAM_PATTERNS, Endpoint

ERROR_SCHEMA = "error"
COMPONENTS = "#/components/schemas/"


def document(endpoints: list[Endpoint], service_root: str, title: str) -> dict:
    paths: dict[str, dict] = {}
    named = set()
    for endpoint in endpoints:
        if endpoint.name in named:   # one operation at two routes (an optional last parameter): its first
            continue
        named.add(endpoint.name)
        path = "/" + "/".join(f"{{{s[1:-1]}}}" if s.startswith("<") else s for s in endpoint.segments)
        paths.setdefault(path, {})[endpoint.method.lower()] = _operation(endpoint)
    names = {ERROR_SCHEMA} | {name for e in endpoints for name in (e.input_schema, e.output_schema) if name}
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "v1"},
        "servers": [{"url": "/api" + service_root}],
        "paths": paths,
        "components": {"schemas": _bundle(names)},
    }


def _operation(endpoint: Endpoint) -> dict:
    operation = {
        "operationId": endpoint.name,
        # A client sends '/' inside a value (taskQueueId `proj/linux`) as %2F.
        "parameters": [_parameter(name, "path", {"type": "string", "pattern": PARAM_PATTERNS[name]})
                       for name in endpoint.params]
        + [_parameter(name, "query", QUERY_OPTIONS[name]) for name in endpoint.query],
        "responses": {
            str(endpoint.status): _success(endpoint),
            "default": {"description": "An error, in Taskcluster's shape", "content": _json(ERROR_SCHEMA)},
        },
    }
    if endpoint.input_schema:
        operation["requestBody"] = {"required": True, "content": _json(endpoint.input_schema)}
    required = scopes.expression(endpoint.scopes_key)
    if required is not None:   # Taskcluster's notation: `<param>` and for/in/each are filled per call
        operation["x-taskcluster-scopes"] = required
    return operation


def _success(endpoint: Endpoint) -> dict:
    if endpoint.status == 204:
        return {"description": "Done; no body"}
    answer = {"description": "The call's answer", "content": _json(endpoint.output_schema)}
    if endpoint.status == 303:
        answer["headers"] = {"Location": {"description": "Where the content is", "schema": {"type": "string"}}}
    return answer


def _parameter(name: str, where: str, schema: dict) -> dict:
    return {"name": name, "in": where, "required": where == "path", "schema": schema}


def _json(schema_name: str | None) -> dict:
    schema = {"$ref": COMPONENTS + component(schema_name)} if schema_name else {"type": "object"}
    return {"application/json": {"schema": schema}}


def component(schema_name: str) -> str:
    """A schema's component name: its name under schemas/v1 with '.' for '/' (a service's
    schemas sit in a folder of its name; OpenAPI's component names take no '/')."""
    return schema_name.replace("/", ".")


def _bundle(names: set[str]) -> dict[str, dict]:
    """Every schema in `names` and every one they reference, as components."""
    bundled: dict[str, dict] = {}
    waiting = sorted(names)
    while waiting:
        name = waiting.pop()
        if component(name) not in bundled:
            schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text())
            bundled[component(name)] = _rewrite(schema, name, waiting)
    return dict(sorted(bundled.items()))


def _rewrite(value, name: str, found: list[str]):
    """`value` with `$id` and `$schema` dropped (a component's base is the document) and each
    `$ref` made a pointer into the components; names referenced are added to `found`. A
    reference is relative to the schema it is in (`../common.json` from a service's folder)."""
    if isinstance(value, list):
        return [_rewrite(item, name, found) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _rewrite(item, name, found) for key, item in value.items() if key not in ("$id", "$schema")}
    if isinstance(value.get("$ref"), str):
        target, _, pointer = urljoin(f"{BASE_URI}{name}.json", value["$ref"]).removeprefix(BASE_URI).partition("#")
        target = target.removesuffix(".json")
        found.append(target)
        out["$ref"] = COMPONENTS + component(target) + pointer
    return out
