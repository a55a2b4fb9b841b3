"""Taskcluster's artifact calls: create and finish an artifact of a run, and read it back
(where its content is, its metadata, the run's list), on the object service and Blob Storage.

The bytes of an `object` artifact are an object named `t/<taskId>/<runId>/<name>`, which
the worker uploads through the object service with the credentials `createArtifact` hands
out; those of an `s3` artifact are one blob under the same name, PUT by an older worker to
a signed URL that takes a plain PUT (see `blobs.block_upload_url`) and made the blob the
first time it is read (or when its run's results document is). A row is written before
anything that depends on it (its expiry is indexed before the row, an object's upload is
locked in after it), so a call repeated after a crash finds what the first one left and
completes it. Reads follow links and answer 404 for an artifact not (yet) present.

`public/results.json` has no row: it is the blob of a run's results document (see
`run_results`), written by its first read once the run is over for good (a HEAD finds it
after that; 404 before the run is over), read as an `s3` artifact, listed where its name
sorts, and expiring with its task. Unless the worker made an artifact of that name, as
Taskcluster lets it (a common name for a task's own results): then that artifact is the
run's `public/results.json`, and no document is written for the run. (A document written in
the instant before such an artifact's row, by a reader of a run resolved `exception` that
still takes artifacts, shares its blob name: the artifact's upload replaces it.)

What a scope check will need is at hand in each call: the taskId and runId
(`queue:create-artifact:<taskId>/<runId>`, `queue:list-artifacts:...`) and, for a read,
every name a link led through (`Found.names`, for `queue:get-artifact:<name>`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from shared.domain.artifacts import (MAX_LINKS, RESULTS_NAME, Artifact, StorageType, check_expires, check_name,
                                check_run, object_name, recreated, requested, results_artifact)
from shared.domain import task_events
from shared.domain.dependencies import run_settled
from shared.domain.errors import Expired, InputError, InvalidInput, NotFound
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.artifact_table import ArtifactRecord, ArtifactTable, row_key
from shared.storage.client.blobs import MAX_BLOCK_BYTES
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.patterns.keys import blob_name
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.storage.patterns.time_index import TimeIndex
from shared.services.artifacts import expiry_index
from shared.services.claims.credentials import CredentialIssuer
from shared.services.event_publisher import EventPublisher
from shared.services.artifacts.objects import SIMPLE_URL_LIFETIME, Objects
from shared.services.tasks.run_results import RunResults, results_blob

S3_PUT_URL_LIFETIME = timedelta(minutes=45)
UPLOAD_CREDENTIALS = timedelta(hours=24)     # or until the artifact expires, if sooner
DOWNLOAD_CREDENTIALS = timedelta(hours=1)
READ_PAGE = 1000   # artifacts read at once when a whole run is walked
MIN_CREDENTIALS = timedelta(minutes=5)
# A results document not written yet is not written this close to its task's expiry.
RESULTS_WRITE_MARGIN = timedelta(minutes=10)


@dataclass(frozen=True)
class Found:
    """An artifact as a read reached it, and every name it went through (links first)."""
    record: ArtifactRecord
    names: tuple[str, ...]

    @property
    def artifact(self) -> Artifact:
        return self.record.artifact


class Artifacts:
    def __init__(self, artifact_table: ArtifactTable, task_table: TaskTable, objects: Objects, blobs, expiries: TimeIndex,
                 issuer: CredentialIssuer, publisher: EventPublisher, root_url: str) -> None:
        self.results = RunResults(self.of_run, blobs, root_url)
        self.publisher = publisher
        self.artifact_table = artifact_table
        self.task_table = task_table
        self.objects = objects
        self.blobs = blobs
        self.expiries = expiries
        self.issuer = issuer

    # -- createArtifact, finishArtifact --------------------------------------------------------
    def create(self, task_id: str, run_id: int, name: str, body: dict, now: datetime | None = None,
               authorize=None) -> dict:
        """createArtifact; `authorize` is the caller's scope check on the task as read."""
        now = now or utcnow()
        check_name(name)
        task = self._task(task_id, authorize, InputError(f"taskId: task {task_id} not found"))
        run = task.status.run(run_id)
        check_run(task_id, run, now)
        wanted = requested(task_id, run_id, name, body, check_expires(body["expires"], task.summary["expires"], now))
        if wanted.storage_type is StorageType.S3 and (wanted.content_length or 0) > MAX_BLOCK_BYTES:
            raise InvalidInput(f"contentLength: an s3 artifact takes at most {MAX_BLOCK_BYTES} bytes (4,000 MiB, "
                               "one block); upload larger ones as object artifacts")
        if wanted.storage_type is StorageType.OBJECT:
            wanted = replace(wanted, details={"uploadId": new_slugid()})
        artifact = self._keep(wanted, task)
        project_id = task.summary["projectId"]
        if artifact.storage_type is StorageType.OBJECT:
            # The worker's upload must have this uploadId (repeated, this finds it fixed).
            self.objects.lock_in(object_name(task_id, run_id, name), project_id, artifact.details["uploadId"],
                                 artifact.expires)
            return self._object_upload(artifact, project_id, f"{run.worker_group}/{run.worker_id}", now)
        if artifact.storage_type is StorageType.S3:
            return {"storageType": "s3", "contentType": artifact.content_type,
                    "expires": to_iso(now + S3_PUT_URL_LIFETIME),
                    "putUrl": self.blobs.block_upload_url(_blob(artifact), now + S3_PUT_URL_LIFETIME)}
        return {"storageType": artifact.storage_type.value}

    def _task(self, task_id: str, authorize, missing: Exception) -> TaskRecord:
        """The task, checked by the caller's `authorize` before anything is written."""
        task = self.task_table.load(task_id)
        if task is None:
            raise missing
        if authorize:
            authorize(task)
        return task

    def _keep(self, wanted: Artifact, task: TaskRecord) -> Artifact:
        """Store `wanted`, or what Taskcluster's rules make of it over the artifact there."""
        expiry_index.watch_artifact(self.expiries, wanted.task_id, wanted.run_id, wanted.name, wanted.expires)
        try:
            return self._published(self.artifact_table.save(wanted, events=self._announced(task, wanted))).artifact
        except AlreadyExists:
            pass
        kept = self._change(wanted.task_id, wanted.run_id, wanted.name,
                            lambda artifact: recreated(artifact, wanted), task)
        return kept.artifact if kept else self._keep(wanted, task)   # gone meanwhile: expired

    def _change(self, task_id: str, run_id: int, name: str, change, task: TaskRecord) -> ArtifactRecord | None:
        """Change an artifact's row, announcing it if the change made it present (or
        replaced a present one), and publish; the record as it ends up (None if gone)."""
        def changed(record: ArtifactRecord) -> ArtifactRecord:
            artifact = change(record.artifact)
            if artifact == record.artifact:
                return record
            return replace(record, artifact=artifact, outbox=record.outbox + self._announced(task, artifact))
        return self.publisher.change(self.artifact_table, self._loader(task_id, run_id, name), changed, self._save)[0]

    def _announced(self, task: TaskRecord, artifact: Artifact) -> tuple:
        """The artifact-created event of `artifact` as written now, if it is announced."""
        if not self.publisher.publishing or not artifact.present or artifact.storage_type is StorageType.S3:
            return ()
        return (task_events.artifact_created(task.summary, task.notice, task.status, artifact.run_id,
                                             artifact.to_json(), to_iso(utcnow())),)

    def _published(self, record: ArtifactRecord) -> ArtifactRecord:
        """A new artifact row: its event out."""
        self.publisher.written(self.artifact_table, record)
        return record

    def _loader(self, task_id: str, run_id: int, name: str):
        return lambda: self.artifact_table.load(task_id, run_id, name)

    def _save(self, record: ArtifactRecord) -> ArtifactRecord:
        return self.artifact_table.save(record.artifact, record.etag, record.outbox)

    def _object_upload(self, artifact: Artifact, project_id: str, worker: str, now: datetime) -> dict:
        name = object_name(artifact.task_id, artifact.run_id, artifact.name)
        expiry = max(min(parse_iso(artifact.expires), now + UPLOAD_CREDENTIALS), now + MIN_CREDENTIALS)
        credentials = self.issuer.issue(f"artifact-upload/{artifact.task_id}/{artifact.run_id}/on/{worker}",
                                        [f"object:upload:{project_id}:{name}"], now, expiry)
        return {"storageType": "object", "name": name, "projectId": project_id,
                "uploadId": artifact.details["uploadId"], "expires": artifact.expires, "credentials": credentials}

    def finish(self, task_id: str, run_id: int, name: str, upload_id: str, authorize=None) -> None:
        """finishArtifact: an `object` artifact's upload is finished; serve it from now on."""
        check_name(name)
        task = self._task(task_id, authorize, NotFound(f"Task {task_id} not found"))

        def finish(artifact: Artifact) -> Artifact:
            if not artifact.storage_type.needs_finish:
                raise InputError(f"storageType: artifact {name} is {artifact.storage_type.value}; only object "
                                   "artifacts are finished")
            if artifact.present:
                return artifact  # finished before: repeating the call is no error
            if upload_id != artifact.details.get("uploadId"):
                raise InputError(f"uploadId: {upload_id} is not the uploadId of artifact {name}")
            stored = self.objects.finished(object_name(task_id, run_id, name))
            if stored is None:
                raise InputError(f"The object holding artifact {name} does not exist or its upload is not "
                                   "finished (call the object service's finishUpload first)")
            return replace(artifact, present=True, size=stored.content_length, hashes=stored.hashes)
        if self._change(task_id, run_id, name, finish, task) is None:
            raise NotFound(f"Artifact {name} of task {task_id} run {run_id} not found")

    # -- reads -----------------------------------------------------------------------------
    def _latest(self, task_id: str) -> TaskRecord:
        """The task, for its latest run (NotFound if it has none)."""
        task = self.task_table.load(task_id)
        if task is None:
            raise NotFound(f"Task {task_id} not found")
        if not task.status.runs:
            raise NotFound(f"Task {task_id} has no runs")
        return task

    def _run(self, task_id: str, run_id: int | None) -> tuple[TaskRecord | None, int]:
        """The run asked for, or the latest (then with the task, read for it)."""
        if run_id is not None:
            return None, run_id
        task = self._latest(task_id)
        return task, len(task.status.runs) - 1

    def _load(self, task_id: str, run_id: int, name: str, task: TaskRecord | None = None) -> ArtifactRecord | None:
        """An artifact's row, or, for `public/results.json` without one, the run's results
        document (see `_document`)."""
        row = self.artifact_table.load(task_id, run_id, name)
        if name != RESULTS_NAME or row is not None:
            return row
        return self._document(task_id, run_id, task)

    def _document(self, task_id: str, run_id: int, task: TaskRecord | None = None) -> ArtifactRecord | None:
        """The run's results document once the run is over for good, written now if no reader
        wrote it before (the task read for it unless given)."""
        task = task or self.task_table.load(task_id)
        if task is None or not run_settled(task.status, run_id):
            return None
        expires = parse_iso(task.summary["expires"])
        size = self.blobs.size(results_blob(task_id, run_id))
        if size is None:
            if expires - utcnow() < RESULTS_WRITE_MARGIN:
                return None      # written this close to expiry, it could land after the task's sweep, for good
            size = self.results.write(task, task.status.run(run_id))
        return ArtifactRecord(results_artifact(task_id, run_id, task.summary["expires"], size))

    def location(self, task_id: str, run_id: int | None, name: str, now: datetime | None = None,
                 require=None) -> dict:
        """getArtifact: `{storageType, url}` of a URL serving the content (for a redirect),
        or an error artifact's `{storageType, reason, message}`. `require(names=...)` checks
        the caller may read every artifact a link led through."""
        now = now or utcnow()
        found = self._follow(task_id, run_id, name, now, require)
        artifact = found.artifact
        if artifact.storage_type is StorageType.OBJECT:
            url = self.objects.download_url(object_name(task_id, artifact.run_id, artifact.name), now)
            return {"storageType": "object", "url": url}
        return self._served(found, now)

    def content(self, task_id: str, run_id: int | None, name: str, now: datetime | None = None,
                require=None) -> dict:
        """artifact, latestArtifact: where the content is and how to fetch it (see `location`)."""
        now = now or utcnow()
        found = self._follow(task_id, run_id, name, now, require)
        artifact = found.artifact
        if artifact.storage_type is StorageType.OBJECT:
            stored = object_name(task_id, artifact.run_id, artifact.name)
            credentials = self.issuer.issue(f"artifact-download/{task_id}/{artifact.run_id}/{artifact.name}",
                                            [f"object:download:{stored}"], now, now + DOWNLOAD_CREDENTIALS)
            return {"storageType": "object", "name": stored, "credentials": credentials}
        return self._served(found, now)

    def _served(self, found: Found, now: datetime) -> dict:
        artifact = found.artifact
        if artifact.storage_type is StorageType.S3:
            self._commit(found.record)
            return {"storageType": "s3", "url": self.blobs.download_url(_blob(artifact), now + SIMPLE_URL_LIFETIME)}
        if artifact.storage_type is StorageType.REFERENCE:
            return {"storageType": "reference", "url": artifact.details["url"]}
        return {"storageType": "error", "reason": artifact.details["reason"], "message": artifact.details["message"]}

    def _follow(self, task_id: str, run_id: int | None, name: str, now: datetime, require=None) -> Found:
        """The artifact `name` of the run (the latest if None), following links (each name
        the link leads to checked by `require`, when given)."""
        check_name(name)
        task, run_id = self._run(task_id, run_id)
        names: list[str] = []
        while True:
            names.append(name)
            record = self._load(task_id, run_id, name, task)
            if record is None or not record.artifact.present:
                raise NotFound(f"Artifact {name} of task {task_id} run {run_id} not found")
            artifact = record.artifact
            if artifact.is_expired(now):
                raise Expired(f"Artifact {name} of task {task_id} run {run_id} expired at {artifact.expires}")
            if artifact.storage_type is not StorageType.LINK:
                return Found(record, tuple(names))
            name = artifact.details["artifact"]
            if require:
                require(names=[*names, name])
            if name in names or len(names) > MAX_LINKS:
                raise InputError(f"Artifact {names[0]} of task {task_id} run {run_id} leads to a link cycle")

    def _commit(self, record: ArtifactRecord) -> Artifact:
        """An `s3` artifact whose uploaded block is made its blob, if it was uploaded."""
        artifact = record.artifact
        if artifact.details.get("committed"):
            return artifact
        size = self.blobs.commit_block(_blob(artifact), artifact.content_type)
        if size is None:
            return artifact    # not uploaded yet: its URL answers 404 until it is
        committed = replace(artifact, details={**artifact.details, "committed": True}, size=size)
        try:
            self.artifact_table.save(committed, record.etag)
        except ChangedSinceRead:
            pass               # another reader committed it
        return committed

    def info(self, task_id: str, run_id: int | None, name: str) -> dict:
        """artifactInfo, latestArtifactInfo: the metadata, links not followed."""
        check_name(name)
        task, run_id = self._run(task_id, run_id)
        record = self._load(task_id, run_id, name, task)
        if record is None or not record.artifact.present:
            raise NotFound(f"Artifact {name} of task {task_id} run {run_id} not found")
        return record.artifact.to_json()

    def list(self, task_id: str, run_id: int | None, after: str, limit: int) -> tuple[dict, str | None]:
        """listArtifacts, listLatestArtifacts: a page of the run's artifacts, in name order
        (by row key, the continuation token), the results document where its name sorts."""
        task = self._latest(task_id)
        latest = len(task.status.runs) - 1
        if run_id is not None and run_id > latest:
            raise NotFound(f"Task {task_id} has no run {run_id}")
        run_id = latest if run_id is None else run_id
        page = self.artifact_table.page(task_id, run_id, after, limit + 1)
        found = dict(page)
        results = row_key(run_id, RESULTS_NAME)
        if results not in found and results > after and (len(page) <= limit or results <= page[-1][0]):
            # the document sorts within this page (a worker's own artifact of that name is listed as it is)
            document = self._document(task_id, run_id, task)   # the page says no artifact has its name
            found.update({results: document} if document else {})
        keys = sorted(found)[:limit]
        answer = {"artifacts": [found[key].artifact.to_json() for key in keys]}
        return answer, keys[-1] if len(found) > limit or len(page) > limit else None

    def of_run(self, task_id: str, run_id: int) -> list[Artifact]:
        """Every present artifact of a run, `s3` ones made blobs if they were uploaded."""
        found, after = [], ""
        while True:
            page = self.artifact_table.page(task_id, run_id, after, READ_PAGE)
            for _, record in page:
                artifact = record.artifact
                if artifact.present and artifact.storage_type is StorageType.S3:
                    artifact = self._commit(record)
                found += [artifact] if artifact.present else []
            if len(page) < READ_PAGE:
                return found
            after = page[-1][0]

    # -- expiry ----------------------------------------------------------------------------------
    def expire(self, task_id: str, run_id: int, name: str, now: datetime) -> bool:
        """Delete an artifact past its expiry (an `s3` one's blob first); True if it was."""
        record = self.artifact_table.load(task_id, run_id, name)
        if record is None or not record.artifact.is_expired(now):
            return False
        if record.artifact.storage_type is StorageType.S3:
            self.blobs.delete(_blob(record.artifact))
        self.artifact_table.delete(task_id, run_id, name)
        return True


def _blob(artifact: Artifact) -> str:
    """The blob of an `s3` artifact: where an `object` artifact's object keeps its bytes."""
    return blob_name(object_name(artifact.task_id, artifact.run_id, artifact.name))
