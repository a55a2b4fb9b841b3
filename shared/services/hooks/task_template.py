"""A hook's task, rendered from its `task` template with JSON-e (the reference implementation,
the `json-e` package), as Taskcluster's hooks service renders it.

The context is the fire's (`domain.hooks.fire_context`: firedBy, taskId, now, payload,
clientId). A template that renders to null declines the fire: no task. Times the template
leaves out are filled in as Taskcluster does (a deprecated convenience there): `created` =
now, `deadline` = now + 1 day, `expires` = now + 30 days (its client's "1 month"); a task
without `taskGroupId` starts a group of its own (the decision-task convention).
"""

from __future__ import annotations

from datetime import timedelta

import jsone

from shared.domain.timestamps import parse_iso, to_iso

DEFAULT_DEADLINE = timedelta(days=1)
DEFAULT_EXPIRES = timedelta(days=30)


class TemplateFailed(Exception):
    """The template does not render (a JSON-e error) or renders to something not a task."""


def render_task(template: dict, context: dict) -> dict | None:
    """The task the fire creates, or None when the template declines."""
    try:
        task = jsone.render(template, context)
    except (jsone.JSONTemplateError, RecursionError, TypeError, ValueError) as error:
        raise TemplateFailed(str(error) if isinstance(error, jsone.JSONTemplateError)
                             else f"{type(error).__name__}: {error}") from None
    if not task:
        return None
    if not isinstance(task, dict):
        raise TemplateFailed(f"the task template rendered to a {type(task).__name__}, not an object")
    now = parse_iso(context["now"])
    for name, value in (("created", now), ("deadline", now + DEFAULT_DEADLINE),
                        ("expires", now + DEFAULT_EXPIRES)):
        if not task.get(name):
            task[name] = to_iso(value)
    if not task.get("taskGroupId"):
        task["taskGroupId"] = context["taskId"]
    return task
