"""Artifacts: what a run leaves behind (a log, a build, a report), and Taskcluster's rules
for making them.

An artifact belongs to one run of one task and has a name (printable ASCII, `/` allowed,
up to 1,024 characters), a storage type, a content type and an expiry no later than its
task's. The invariants kept here:
- an artifact is created only for a run a worker claimed, while it runs, or for 25 minutes
  after it resolved `exception` (so a worker that lost its task can still upload its log);
- it is served only once `present`: at once for every type but `object`, whose bytes are
  present once `finishArtifact` found their upload finished;
- creating it again with the same details changes nothing; the only changes allowed are a
  later `expires` (not for `object`, whose expiry the object service fixed at its upload),
  a `reference`'s URL, and a `reference` becoming a `link`;
- `public/results.json` is the queue's own: the results document of a resolved run, an
  `s3` artifact no worker creates (see `results_artifact`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import Enum

from shared.domain.errors import Conflict, InputError, InvalidInput
from shared.domain.runs import Run, RunState
from shared.domain.timestamps import parse_iso, to_iso

MAX_NAME = 1024
_PRINTABLE = re.compile(r"[\x20-\x7e]+")
# A run resolved `exception` still takes artifacts this long, as Taskcluster allows.
EXCEPTION_GRACE = timedelta(minutes=25)
# `expires` may be this far in the past (clock skew between worker and queue).
EXPIRES_SLACK = timedelta(minutes=15)
DEFAULT_CONTENT_TYPE = "application/binary"
MAX_LINKS = 100   # links followed for one read; a longer chain is refused like a cycle
RESULTS_NAME = "public/results.json"
RESULTS_CONTENT_TYPE = "application/json"


class StorageType(str, Enum):
    OBJECT = "object"        # bytes on the object service; present once finished
    S3 = "s3"                # bytes PUT by an older worker to a signed URL; present at once
    REFERENCE = "reference"  # a URL the queue redirects to (303)
    LINK = "link"            # served as another artifact of the same run
    ERROR = "error"          # answered 424 with `reason` and `message`

    @property
    def needs_finish(self) -> bool:
        return self is StorageType.OBJECT


@dataclass(frozen=True)
class Artifact:
    task_id: str
    run_id: int
    name: str
    storage_type: StorageType
    content_type: str
    expires: str
    present: bool
    # By type: object {uploadId}, s3 {committed: the block was made the blob}, reference
    # {url}, link {artifact}, error {reason, message}.
    details: dict = field(default_factory=dict)
    content_length: int | None = None            # as the worker reported it (Taskcluster shows only this)
    hashes: dict = field(default_factory=dict)   # of an object's bytes, once finished
    size: int | None = None                      # of the bytes stored, once known (finished, or committed)

    def to_json(self) -> dict:
        """Taskcluster's artifact metadata (`artifactInfo`, `listArtifacts`)."""
        out = {"storageType": self.storage_type.value, "name": self.name, "expires": self.expires,
               "contentType": self.content_type}
        if self.content_length is not None:
            out["contentLength"] = self.content_length
        return out

    def is_expired(self, now: datetime) -> bool:
        return parse_iso(self.expires) <= now


def check_name(name: str) -> None:
    if not 1 <= len(name) <= MAX_NAME or not _PRINTABLE.fullmatch(name):
        raise InvalidInput(f"name: {name[:100]!r} must be 1 to {MAX_NAME} printable ASCII characters")


def object_name(task_id: str, run_id: int, name: str) -> str:
    """The object on the object service that holds an `object` artifact's bytes."""
    return f"t/{task_id}/{run_id}/{name}"


def results_artifact(task_id: str, run_id: int, task_expires: str, size: int) -> Artifact:
    """A run's results document as its artifact `public/results.json`: one blob the queue
    wrote when the run's task resolved (no row), served as `s3` artifacts are, with no
    hashes, and expiring with its task."""
    return Artifact(task_id, run_id, RESULTS_NAME, StorageType.S3, RESULTS_CONTENT_TYPE, task_expires, True,
                    {"committed": True}, size, size=size)


def takes_artifacts(run: Run, now: datetime) -> bool:
    """Taskcluster's rule: a run takes artifacts while it runs, and for 25 minutes after it
    resolved `exception` (a worker reports the exception first, then uploads its logs)."""
    if run.state is RunState.RUNNING:
        return True
    return run.state is RunState.EXCEPTION and bool(run.resolved) and parse_iso(run.resolved) > now - EXCEPTION_GRACE


def check_run(task_id: str, run: Run | None, now: datetime) -> None:
    """A run may take artifacts: claimed, and running (or resolved `exception` lately)."""
    if run is None:
        raise InputError(f"runId: task {task_id} has no such run")
    if not run.worker_group or not run.worker_id:
        raise InputError(f"runId: run {run.run_id} of task {task_id} was never claimed by a worker, "
                           "so it has no artifacts")
    if takes_artifacts(run, now):
        return
    raise Conflict(f"Run {run.run_id} of task {task_id} is {run.state.value}: artifacts are created while a "
                   "run is running, or up to 25 minutes after it resolved exception")


def check_expires(expires: str, task_expires: str, now: datetime) -> str:
    """`expires`, normalized, if it is not in the past and not after the task's."""
    moment = parse_iso(expires)
    if moment < now - EXPIRES_SLACK:
        raise InputError(f"expires: {expires} is in the past")
    if moment > parse_iso(task_expires):
        raise InputError(f"expires: {expires} is after the task's expires {task_expires}; an artifact may "
                           "not outlive its task")
    return to_iso(moment)


def requested(task_id: str, run_id: int, name: str, body: dict, expires: str) -> Artifact:
    """The artifact a createArtifact body asks for (an object's uploadId comes later)."""
    kind = StorageType(body["storageType"])
    details = {
        StorageType.REFERENCE: lambda: {"url": body["url"]},
        StorageType.LINK: lambda: {"artifact": body["artifact"]},
        StorageType.ERROR: lambda: {"reason": body["reason"], "message": body["message"]},
    }.get(kind, dict)()
    if kind is StorageType.LINK:
        check_name(body["artifact"])
    return Artifact(task_id, run_id, name, kind, body.get("contentType") or DEFAULT_CONTENT_TYPE, expires,
                    present=not kind.needs_finish, details=details, content_length=body.get("contentLength"))


def recreated(original: Artifact, new: Artifact) -> Artifact:
    """What a createArtifact of `new` over the existing `original` leaves stored (the very
    `original` when nothing changes); Conflict if the change is not one Taskcluster allows."""
    kind = new.storage_type
    same_type = original.storage_type is kind
    allowed = (
        (kind is StorageType.LINK or original.content_type == new.content_type)
        and parse_iso(original.expires) <= parse_iso(new.expires)
        and (not same_type or kind is StorageType.REFERENCE or _lasting(original.details) == _lasting(new.details))
        and (same_type or (original.storage_type is StorageType.REFERENCE and kind is StorageType.LINK))
        and (kind is not StorageType.OBJECT or original.expires == new.expires)
    )
    if not allowed:
        raise Conflict(f"Artifact {original.name} already exists as {original.storage_type.value} "
                       f"({original.content_type}, expires {original.expires}); it may only be created "
                       "again the same, with a later expiry, or as a reference or link replacing a reference")
    if same_type and kind is not StorageType.REFERENCE:
        changed = replace(original, expires=new.expires)
    else:
        changed = replace(original, storage_type=kind, details=new.details, expires=new.expires)
    return original if changed == original else changed


def _lasting(details: dict) -> dict:
    """The details a request can repeat: not the uploadId or state the queue added."""
    return {key: value for key, value in details.items() if key not in ("uploadId", "committed")}
