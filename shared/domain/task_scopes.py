"""What creating a task requires of whoever creates it, in Taskcluster's scope expression
notation (see `shared/auth/expressions.py`): the API checks it of a createTask's caller and of
a graph's, and the hooks service of a hook's role.
"""

from __future__ import annotations

from shared.domain.task_definition import PRIORITIES


def task_creation(definition: dict) -> dict:
    """The parameters of CREATE_TASK for a (normalized) task definition. A caller allowed a
    priority may create tasks of any lower one."""
    return {
        "scopes": definition["scopes"],
        "routes": definition["routes"],
        "schedulerId": definition["schedulerId"],
        "projectId": definition["projectId"],
        "priorities": PRIORITIES[:PRIORITIES.index(definition["priority"]) + 1],
        "provisionerId": definition["provisionerId"],
        "workerType": definition["workerType"],
    }


# Taskcluster's, and (the form seed 001 gives) `queue:create-task:<priority>/<taskQueueId>`.
CREATE_TASK = {"AllOf": [
    {"for": "scope", "in": "scopes", "each": "<scope>"},
    {"for": "route", "in": "routes", "each": "queue:route:<route>"},
    "queue:create-task:project:<projectId>",
    "queue:scheduler-id:<schedulerId>",
    {"AnyOf": [
        {"for": "priority", "in": "priorities", "each": "queue:create-task:<priority>:<provisionerId>/<workerType>"},
        {"for": "priority", "in": "priorities", "each": "queue:create-task:<priority>/<provisionerId>/<workerType>"},
    ]},
]}
