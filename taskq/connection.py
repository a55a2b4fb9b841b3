"""Where the Queue is and who we are: as the official client's `optionsFromEnvironment` reads it.

`TASKCLUSTER_ROOT_URL`, `TASKCLUSTER_CLIENT_ID`, `TASKCLUSTER_ACCESS_TOKEN` (and
`TASKCLUSTER_CERTIFICATE`). Without a root URL, the local host of `make run` and its root
client are meant, so `make run` then `taskq ...` needs no setup.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import taskcluster

from taskq.scheduler import Scheduler

LOCAL_ROOT_URL = "http://127.0.0.1:7071"
# The local host's root client, which `make run` keeps with its data in this checkout; never
# used once TASKCLUSTER_ROOT_URL names a deployment.
LOCAL_ROOT_CLIENT = Path(__file__).resolve().parent.parent / ".azurite" / "root-client.json"


def client_options(**extra) -> dict:
    options = taskcluster.optionsFromEnvironment({})
    if "rootUrl" not in options:
        options["rootUrl"] = LOCAL_ROOT_URL
        if "credentials" not in options and LOCAL_ROOT_CLIENT.exists():
            options["credentials"] = json.loads(LOCAL_ROOT_CLIENT.read_text())
    return {**options, **extra}


def queue(**extra) -> taskcluster.Queue:
    return taskcluster.Queue(client_options(**extra))


def index(**extra) -> taskcluster.Index:
    """The index service beside the Queue, on the same root URL and credentials."""
    return taskcluster.Index(client_options(**extra))


def secrets(**extra) -> taskcluster.Secrets:
    """The secrets service beside the Queue, on the same root URL and credentials."""
    return taskcluster.Secrets(client_options(**extra))


def scheduler(**extra):
    """The task-graph scheduler beside the Queue, on the same root URL and credentials."""
    return Scheduler(client_options(**extra))


LOCAL_BROKER = "amqp://guest:guest@127.0.0.1:5672/%2F"  # the RabbitMQ of `make run`


def events_url() -> str | None:
    """The AMQP broker of the Queue's events (RabbitMQ, or Pulse): EVENTS_AMQP_URL, else the
    local broker when the Queue is the local host, else none."""
    if os.environ.get("EVENTS_AMQP_URL"):
        return os.environ["EVENTS_AMQP_URL"]
    return LOCAL_BROKER if client_options()["rootUrl"] == LOCAL_ROOT_URL else None
