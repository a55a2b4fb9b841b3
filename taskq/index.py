"""`taskq index find` and `taskq index list`: the index service (Taskcluster's), by its
official client on the Queue's root URL and credentials."""

from __future__ import annotations

from taskq.connection import index
from taskq.output import emit_json, emit_line
from taskq.pages import every_page


def find(args, queue) -> int:
    entry = index().findTask(args.path)
    if args.json:
        emit_json(entry)
    else:
        emit_line(f"{entry['taskId']}  {entry['namespace']}  rank {entry['rank']}  expires {entry['expires']}")
    return 0


def list_namespace(args, queue) -> int:
    """What is directly under a namespace (the root by default): its namespaces, then its tasks."""
    client = index()
    namespaces = every_page(lambda query: client.listNamespaces(args.namespace, query=query), "namespaces")
    tasks = every_page(lambda query: client.listTasks(args.namespace, query=query), "tasks")
    if args.json:
        emit_json({"namespaces": namespaces, "tasks": tasks})
        return 0
    for namespace in namespaces:
        emit_line(f"{namespace['namespace']}.")
    for task in tasks:
        emit_line(f"{task['namespace']}  {task['taskId']}  rank {task['rank']}  expires {task['expires']}")
    return 0

