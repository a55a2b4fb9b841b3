"""Every way a command can fail, as the one line `taskq` prints for it (never a traceback).

`CommandError` is ours: a fact the command found (no such run, a log nobody uploaded).
The rest come from the libraries underneath: the Queue's answers (code and message, as
Taskcluster sends them), the network, a file, the download helpers' aiohttp. A failure
that fits none of them is still one line, naming its type; TASKQ_DEBUG=1 shows its traceback.
"""

from __future__ import annotations

import asyncio
import os

import aiohttp
import requests
import taskcluster

from taskq.task_files import TaskFileError


class CommandError(Exception):
    """What the command found that keeps it from doing what was asked (one line)."""


def describe(failure: BaseException) -> tuple[str, str]:
    """(code, message) of a failure: the server's code where it gave one, else a kind."""
    exceptions = taskcluster.exceptions
    if isinstance(failure, exceptions.TaskclusterRestFailure):
        body = failure.body if isinstance(failure.body, dict) else {}
        return body.get("code", f"HTTP {failure.status_code}"), body.get("message", str(failure))
    if isinstance(failure, exceptions.TaskclusterArtifactError):
        return failure.reason, f"an error artifact: {failure}"
    if isinstance(failure, (exceptions.TaskclusterConnectionError, requests.ConnectionError)):
        return "ConnectionError", f"cannot reach the Queue: {failure}"
    if isinstance(failure, (aiohttp.ClientError, asyncio.TimeoutError)):
        return "DownloadError", f"cannot read the artifact's content: {_first_words(failure)}"
    if isinstance(failure, (CommandError, TaskFileError, ValueError, OSError, exceptions.TaskclusterFailure)):
        return "", str(failure)
    return type(failure).__name__, f"{failure} (TASKQ_DEBUG=1 shows where)"


def debugging() -> bool:
    return os.environ.get("TASKQ_DEBUG") == "1"


def _first_words(failure: BaseException) -> str:
    return str(failure) or type(failure).__name__
