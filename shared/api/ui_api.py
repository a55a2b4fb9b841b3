"""The data the browser view needs beyond the Queue API (`/api/ui/data/...`), declared as data.

Everything about a group's tasks comes from the Queue API itself (listTaskGroup, task,
status, artifacts); only the list of recent groups, which Taskcluster has no call for, is here.
"""

from __future__ import annotations

from .router import Endpoint

SERVICE_ROOT = "/ui/data"
RECENT_GROUPS = 50

ENDPOINTS = [
    Endpoint("recentTaskGroups", "GET", "/task-groups",
             lambda call: call.services.task_groups.recent(RECENT_GROUPS)),
]
