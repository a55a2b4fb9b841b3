"""generic-worker's payload, read and checked before anything runs.

A payload that does not parse is never run: the run is resolved `exception` /
`malformed-payload` with the reason in its log. Keys generic-worker knows but this worker
does not implement (features, mounts, ...) are named in the log and otherwise ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ARTIFACT_TYPES = ("file", "directory")
IGNORED_KEYS = ("features", "mounts", "osGroups", "onExitStatus", "supersederUrl", "logs")
KNOWN_KEYS = ("command", "env", "maxRunTime", "artifacts", *IGNORED_KEYS)


class MalformedPayload(Exception):
    """Why the payload cannot be run (one line)."""


@dataclass(frozen=True)
class ArtifactSpec:
    type: str
    path: str
    name: str
    expires: str | None = None


@dataclass(frozen=True)
class Payload:
    commands: list[list[str]]
    env: dict[str, str] = field(default_factory=dict)
    max_run_time: int | None = None
    artifacts: list[ArtifactSpec] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _require(condition: bool, reason: str) -> None:
    if not condition:
        raise MalformedPayload(reason)


def _commands(value) -> list[list[str]]:
    _require(isinstance(value, list) and value, "payload.command must be a non-empty list of commands")
    for index, command in enumerate(value):
        _require(isinstance(command, list) and command and all(isinstance(word, str) for word in command),
                 f"payload.command[{index}] must be a non-empty list of strings (one command, "
                 f"e.g. [\"echo\", \"hello\"]), got {command!r}")
    return value


def _env(value) -> dict[str, str]:
    _require(isinstance(value, dict), f"payload.env must map names to strings, got {value!r}")
    for key, item in value.items():
        # Names the first bad variable: with many, "must map names to strings" left people searching.
        _require(isinstance(key, str) and isinstance(item, str),
                 f"payload.env.{key} must be a string (quote it: \"{item}\"), got {item!r}")
    return value


def _max_run_time(value) -> int:
    _require(isinstance(value, int) and not isinstance(value, bool) and value > 0,
             f"payload.maxRunTime must be a positive whole number of seconds, got {value!r}")
    return value


def _artifact(index: int, value) -> ArtifactSpec:
    where = f"payload.artifacts[{index}]"
    _require(isinstance(value, dict), f"{where} must be an object")
    unknown = set(value) - {"type", "path", "name", "expires", "contentType", "contentEncoding"}
    _require(not unknown, f"{where} has unknown keys: {', '.join(sorted(unknown))}")
    _require(value.get("type") in ARTIFACT_TYPES, f"{where}.type must be one of {', '.join(ARTIFACT_TYPES)}")
    _require(isinstance(value.get("path"), str) and value["path"], f"{where}.path must be a non-empty string")
    name = value.get("name", value["path"])
    _require(isinstance(name, str) and name, f"{where}.name must be a non-empty string")
    _require(isinstance(value.get("expires", ""), str), f"{where}.expires must be a date-time string")
    return ArtifactSpec(value["type"], value["path"], name, value.get("expires"))


def parse(payload) -> Payload:
    _require(isinstance(payload, dict), "the payload must be an object")
    unknown = set(payload) - set(KNOWN_KEYS)
    _require(not unknown, f"payload has keys this worker does not know: {', '.join(sorted(unknown))}")
    _require("command" in payload, "payload.command is missing")
    artifacts = payload.get("artifacts", [])
    _require(isinstance(artifacts, list), "payload.artifacts must be a list")
    return Payload(
        commands=_commands(payload["command"]),
        env=_env(payload.get("env", {})),
        max_run_time=_max_run_time(payload["maxRunTime"]) if "maxRunTime" in payload else None,
        artifacts=[_artifact(index, item) for index, item in enumerate(artifacts)],
        ignored=sorted(set(payload) & set(IGNORED_KEYS)))
