"""The data the browser view needs beyond the Queue API (`/api/ui/data/...`), declared as data.

Everything about a group's tasks comes from the Queue API itself (listTaskGroup, task,
status, artifacts); here are only what Taskcluster has no call for: the list of recent
groups, and the feeds that carry a group's events to the page (`services/task_groups/group_feeds.py`:
a long poll, since a Functions HTTP answer is one body).
"""

from __future__ import annotations

from shared.domain.errors import NotFound
from shared.runtime.thread_pools import GROUP_DESCRIPTIONS
from shared.services.task_groups.group_feeds import MAX_EVENTS, MAX_WAIT
from shared.api.router import Endpoint

SERVICE_ROOT = "/ui/data"
RECENT_GROUPS = 50
NAMED_TASKS = 3     # a group is shown by the names of its first few tasks


def recent_groups(services) -> dict:
    """The groups written to last, each with what a person knows it by: the names of its first
    tasks (in taskId order; `more` when it has others), and its state: a task graph's
    (creating, running, blocked, finished), else `resolved` once every task resolved, or
    `unresolved`. Ids alone made a list nobody could read."""
    groups = services.task_groups.recent(RECENT_GROUPS)["taskGroups"]
    return {"taskGroups": list(GROUP_DESCRIPTIONS.map(lambda group: {**group, **_described(services, group)}, groups))}


def _described(services, group: dict) -> dict:
    group_id = group["taskGroupId"]
    try:
        page, last = services.task_groups.list(group_id, "", NAMED_TASKS)
    except NotFound:   # expired since the list was read
        page, last = {"tasks": []}, None
    try:
        graph_state = services.task_graphs.status(group_id)["status"]["state"]
    except NotFound:
        graph_state = None
    return {"names": [entry["task"]["metadata"]["name"] for entry in page["tasks"]],
            "more": last is not None, "graph": graph_state is not None,
            "state": graph_state or ("resolved" if group.get("resolved") else "unresolved")}


ENDPOINTS = [
    Endpoint("recentTaskGroups", "GET", "/task-groups", lambda call: recent_groups(call.services)),
    # `live: false` (no bus, or none reachable) tells the page to poll listTaskGroup instead.
    Endpoint("createTaskGroupFeed", "POST", "/task-group/<taskGroupId>/feed",
             lambda call: call.services.group_feeds.open(call.params["taskGroupId"])),
    # The events since the last read, waiting up to `wait` seconds for the first; 404 once
    # the feed expired (open another, and list the group again: events may have been missed).
    Endpoint("readTaskGroupFeed", "GET", "/task-group/<taskGroupId>/feed/<feedId>",
             lambda call: call.services.group_feeds.read(call.params["taskGroupId"], call.params["feedId"],
                                                         call.query.get("wait", MAX_WAIT),
                                                         call.query.get("limit", MAX_EVENTS)),
             query=("wait", "limit")),
]
