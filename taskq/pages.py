"""Every page of a Taskcluster listing call, followed by its continuation tokens."""

from __future__ import annotations

from typing import Callable


def every_page(page: Callable[[dict], dict], key: str) -> list:
    """The items under `key` of every page `page(query)` answers, in order."""
    found, token = [], None
    while True:
        answer = page({"continuationToken": token} if token else {})
        found += answer[key]
        token = answer.get("continuationToken")
        if not token:
            return found
