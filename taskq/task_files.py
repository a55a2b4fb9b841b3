"""Task definitions and task graphs read from YAML or JSON files, with what people leave out filled in.

People write the part that matters (what to run, where); `created`, `deadline` and the
metadata Taskcluster requires are filled in here, each only when the file leaves it out.
"""

from __future__ import annotations

import getpass
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import yaml

DEFAULT_DEADLINE = timedelta(hours=1)


class TaskFileError(Exception):
    """The file cannot be read or is not a task (definition or graph)."""


def read_document(path: str) -> dict:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        document = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        raise TaskFileError(f"{path}: {_where(error)}") from error
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise TaskFileError(f"{path}: {error}".splitlines()[0]) from error
    if not isinstance(document, dict):
        raise TaskFileError(f"{path}: expected a mapping at the top level, found {type(document).__name__}")
    return document


def _where(error: yaml.MarkedYAMLError) -> str:
    """A YAML error in one line, with the line and column of the problem (and of what it was
    inside): the first line of PyYAML's own text says only `while parsing a flow sequence`."""
    mark = error.problem_mark or error.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    inside = ""
    if error.context and error.context_mark and error.context_mark is not mark:
        inside = f" ({error.context}, which began at line {error.context_mark.line + 1}, " \
                 f"column {error.context_mark.column + 1})"
    return f"{where}{error.problem or error.context}{inside}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def with_defaults(task: dict, source: str, task_queue_id: str | None = None, name: str | None = None) -> dict:
    """A copy of `task` with created, deadline, taskQueueId and metadata filled in where missing."""
    now = datetime.now(timezone.utc)
    task = dict(task)
    task.setdefault("created", _iso(now))
    task.setdefault("deadline", _iso(now + DEFAULT_DEADLINE))
    if task_queue_id and "taskQueueId" not in task and "provisionerId" not in task:
        task["taskQueueId"] = task_queue_id
    task.setdefault("payload", {})
    user = getpass.getuser()
    metadata = {"name": name or Path(source).stem or "task", "description": f"created with taskq from {source}",
                "owner": f"{user}@localhost",
                # Taskcluster requires an http(s) URL; a local file has none, so its path stands in.
                "source": "https://localhost/taskq" + quote(str(Path(source).resolve()))}
    task["metadata"] = {**metadata, **task.get("metadata", {})}
    return task


def load_task(path: str, task_queue_id: str | None = None) -> tuple[str | None, dict]:
    """(taskId named in the file or None, the definition). A file may hold the definition alone,
    or `{taskId: ..., task: {...}}`."""
    document = read_document(path)
    if "task" in document and isinstance(document["task"], dict):
        return document.get("taskId"), with_defaults(document["task"], path, task_queue_id)
    return document.pop("taskId", None), with_defaults(document, path, task_queue_id)


def load_graph(path: str, task_queue_id: str | None = None) -> dict:
    """A task graph in seed 000's format (`tasks: {label: {requires, reruns, task}}`, `routing`),
    each task given the same defaults as a single one (named after its label)."""
    graph = read_document(path)
    tasks = graph.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        raise TaskFileError(f"{path}: a task graph needs 'tasks', a mapping from label to task node")
    for label, node in tasks.items():
        if not isinstance(node, dict) or not isinstance(node.get("task"), dict):
            raise TaskFileError(f"{path}: task '{label}' needs a 'task' mapping")
        node["task"] = with_defaults(node["task"], path, task_queue_id, name=label)
    return graph
