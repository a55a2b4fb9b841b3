"""Another Taskcluster-compatible queue measured beside ours (`--against ROOT_URL`):
Taskcluster's own, started by `bench/taskcluster/start.sh`, with the credentials of
TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN. It offers what the benchmarks ask of our
running host: official clients, and a log (which it does not have) for failures."""

from __future__ import annotations

import os
from pathlib import Path

import taskcluster


class OtherQueue:
    def __init__(self, root_url: str) -> None:
        self.root_url = root_url
        self.log_path: Path | None = None   # its logs are its own (bench/taskcluster/start.sh keeps them)

    def client(self, **options) -> taskcluster.Queue:
        """An official client of the other queue, with `options` (maxRetries, say)."""
        credentials = {"clientId": os.environ.get("TASKCLUSTER_CLIENT_ID", ""),
                       "accessToken": os.environ.get("TASKCLUSTER_ACCESS_TOKEN", "")}
        return taskcluster.Queue({"rootUrl": self.root_url, "maxRetries": 0, **options,
                                  **({"credentials": credentials} if credentials["clientId"] else {})})


def add_argument(parser) -> None:
    parser.add_argument("--against", metavar="ROOT_URL",
                        help="also measure another Taskcluster-compatible queue, Taskcluster's own say "
                             "(credentials: TASKCLUSTER_CLIENT_ID/_ACCESS_TOKEN; see bench/taskcluster/start.sh)")
