"""Temporary Taskcluster credentials handed to a worker with each claim.

As Taskcluster's queue makes them: named
`task-client/<taskId>/<runId>/on/<workerGroup>/<workerId>/until/<takenUntil in epoch seconds>`,
valid from now until `takenUntil`, carrying the scopes to reclaim, resolve and create
artifacts for that run plus the task's `scopes`. The certificate is made by Taskcluster's
client library, signed with the Queue's credentials client (QUEUE_CREDENTIALS_CLIENT_ID),
which the API's verifier trusts with `*` (see `api/access.py`); the API also refuses them
for the run once it is no longer theirs.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from taskcluster.client import createTemporaryCredentials

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Taskcluster issues certificates valid from a little in the past, for clock drift.
CLOCK_DRIFT = timedelta(minutes=15)
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
        name = f"task-client/{run}/on/{worker_group}/{worker_id}/until/{_epoch_seconds(taken_until)}"
        return self.issue(name, scopes, now, taken_until, start=now)

    def issue(self, name: str, scopes: list[str], now: datetime, expiry: datetime,
              start: datetime | None = None) -> dict:
        """Named temporary credentials for `scopes`, valid from `start` (by default a little
        before `now`, for clock drift) until `expiry`."""
        credentials = createTemporaryCredentials(self.client_id, self.access_token, start or now - CLOCK_DRIFT,
                                                 expiry, scopes, name=_NOT_IN_CLIENT_ID.sub("_", name))
        # The library hands the token back as bytes; the API speaks JSON text.
        return {key: value.decode() if isinstance(value, bytes) else value for key, value in credentials.items()}


def _epoch_seconds(moment: datetime) -> str:
    """As JavaScript prints `takenUntil.getTime() / 1000` of the `takenUntil` the claim shows
    (whole milliseconds): whole seconds, or with the milliseconds."""
    millis = (moment - EPOCH) // timedelta(milliseconds=1)
    return str(millis // 1000) if millis % 1000 == 0 else str(millis / 1000)
