"""Temporary Taskcluster credentials handed to a worker with each claim.

They name the run and carry the task's scopes plus the run-specific ones, and expire
shortly after `takenUntil`. The certificate format is Taskcluster's own, made by its
client library so that it is byte-for-byte what Taskcluster's auth service accepts.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from taskcluster.client import createTemporaryCredentials

# Taskcluster issues certificates valid from a little in the past, for clock drift.
CLOCK_DRIFT = timedelta(minutes=15)
AFTER_TAKEN_UNTIL = timedelta(minutes=5)
# What a Taskcluster clientId may hold; a name made from an artifact's has the rest replaced,
# or a Hawk header could not carry it.
_NOT_IN_CLIENT_ID = re.compile(r"[^A-Za-z0-9!@/:.+|_-]")


class CredentialIssuer:
    def __init__(self, client_id: str, access_token: str) -> None:
        self.client_id = client_id
        self.access_token = access_token

    def for_run(self, task_id: str, run_id: int, worker_group: str, worker_id: str,
                task_scopes: list[str], now: datetime, taken_until: datetime) -> dict:
        run = f"{task_id}/{run_id}"
        scopes = [
            f"queue:reclaim-task:{run}",
            f"queue:resolve-task:{run}",
            f"queue:create-artifact:{run}",
            *task_scopes,
        ]
        return self.issue(f"task-client/{run}/on/{worker_group}/{worker_id}", scopes, now,
                          taken_until + AFTER_TAKEN_UNTIL)

    def issue(self, name: str, scopes: list[str], now: datetime, expiry: datetime) -> dict:
        """Named temporary credentials for `scopes`, valid from a little before `now` (for
        clock drift) until `expiry`."""
        credentials = createTemporaryCredentials(self.client_id, self.access_token, now - CLOCK_DRIFT, expiry,
                                                 scopes, name=_NOT_IN_CLIENT_ID.sub("_", name))
        # The library hands the token back as bytes; the API speaks JSON text.
        return {key: value.decode() if isinstance(value, bytes) else value for key, value in credentials.items()}
