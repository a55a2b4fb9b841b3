"""The object service (`/api/object/v1/`): named, immutable bytes with their hashes, which
clients upload and download straight to and from Blob Storage.

An object's first `createUpload` fixes its projectId, uploadId and expiry (the queue makes
that call itself for an `object` artifact, so the worker's upload must match it). The bytes
come inline (`dataInline`, up to 8 KiB, written here) or by the client's PUT to a signed URL
(`putUrl`). `finishUpload` makes the object immutable and downloadable, once its blob is
there with the length announced. Hashes are recorded, not computed from uploaded bytes
(but inline ones, which pass through here): an existing hash cannot change, and the
downloader verifies them, as Taskcluster's download helpers do. Every object is indexed
at its expiry, when its blob and row are deleted (see `expiry_index`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import replace
from datetime import datetime, timedelta

from shared.domain.errors import Conflict, InvalidInput, NoMatchingMethod, NotFound
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.client.blobs import MAX_PUT_BYTES
from shared.storage.errors import AlreadyExists
from shared.storage.patterns.keys import blob_name
from shared.storage.tables.object_table import ObjectRecord, ObjectTable
from shared.storage.patterns.time_index import TimeIndex
from shared.services.artifacts import expiry_index
from shared.storage.patterns.conditional_writes import change_until_saved

MAX_NAME = 2048
_PRINTABLE = re.compile(r"[\x20-\x7e]+")
MAX_INLINE_BYTES = 8192
EXPIRES_SLACK = timedelta(minutes=15)
PUT_URL_LIFETIME = timedelta(minutes=45)
GET_URL_LIFETIME = timedelta(minutes=5)       # `getUrl`: the client starts its GET at once
SIMPLE_URL_LIFETIME = timedelta(minutes=30)   # `simple` and the redirects to it
URL_MARGIN = timedelta(minutes=1)             # a URL outlives the `expires` it is announced with
DOWNLOAD_METHODS = ("getUrl", "simple")       # by preference


class Objects:
    def __init__(self, object_table: ObjectTable, blobs, expiries: TimeIndex) -> None:
        self.object_table = object_table
        self.blobs = blobs
        self.expiries = expiries

    # -- upload ---------------------------------------------------------------------------
    def create_upload(self, name: str, body: dict, now: datetime | None = None) -> dict:
        """createUpload: begin (or repeat) the upload of `name` and pick a method."""
        now = now or utcnow()
        check_name(name)
        expires = to_iso(parse_iso(body["expires"]))
        if parse_iso(expires) < now - EXPIRES_SLACK:
            raise InvalidInput(f"expires: {body['expires']} is in the past")
        methods = body["proposedUploadMethods"]
        inline = _inline_data(methods["dataInline"]) if "dataInline" in methods else None
        if "putUrl" in methods and not 0 <= methods["putUrl"]["contentLength"] <= MAX_PUT_BYTES:
            raise InvalidInput(f"proposedUploadMethods.putUrl.contentLength: at most {MAX_PUT_BYTES} bytes "
                               "(5,000 MiB) go in one PUT")
        hashes = body.get("hashes", {})
        if inline is not None:
            hashes = _with_hashes_of(inline, hashes)
        wanted = ObjectRecord(name, body["projectId"], body["uploadId"], expires, hashes=hashes)
        if inline is not None:
            wanted = replace(wanted, content_type=methods["dataInline"]["contentType"], content_length=len(inline))
        elif "putUrl" in methods:
            wanted = replace(wanted, content_type=methods["putUrl"]["contentType"],
                             content_length=methods["putUrl"]["contentLength"])
        record = self._begin(wanted, lambda existing: not existing.finished)
        if inline is not None:
            self.blobs.put(blob_name(name), inline, wanted.content_type)
            method = {"dataInline": True}
        elif "putUrl" in methods:
            url, headers = self.blobs.upload_url(blob_name(name), record.content_type, record.content_length,
                                                 now + PUT_URL_LIFETIME + URL_MARGIN)
            method = {"putUrl": {"url": url, "expires": to_iso(now + PUT_URL_LIFETIME), "headers": headers}}
        else:
            method = {}
        return {"projectId": record.project_id, "uploadId": record.upload_id, "expires": record.expires,
                "uploadMethod": method}

    def lock_in(self, name: str, project_id: str, upload_id: str, expires: str) -> None:
        """Fix the upload of `name` before its uploader begins (the queue's createArtifact):
        as a createUpload proposing no method, but the upload may be finished already."""
        self._begin(ObjectRecord(name, project_id, upload_id, expires), lambda existing: True)

    def _begin(self, wanted: ObjectRecord, accepts) -> ObjectRecord:
        """The object's row with `wanted`'s upload: inserted (indexed at its expiry first),
        or the existing one if it is that same upload and `accepts` it, with `wanted`'s
        hashes and method added."""
        existing = self.object_table.load(wanted.name)
        if existing is None:
            expiry_index.watch_object(self.expiries, wanted.name, wanted.expires)
            try:
                return self.object_table.save(wanted)
            except AlreadyExists:
                existing = self.object_table.load(wanted.name)

        def add(record: ObjectRecord) -> ObjectRecord:
            if (not accepts(record) or record.expires != wanted.expires
                    or (record.project_id, record.upload_id) != (wanted.project_id, wanted.upload_id)):
                raise Conflict(f"Object {wanted.name} already exists, with another upload, projectId or expiry, "
                               "or finished")
            if record.finished:
                return record
            hashes = _merged(record.hashes, wanted.hashes, wanted.name)
            method = {"content_type": wanted.content_type, "content_length": wanted.content_length} \
                if wanted.content_type else {}
            return replace(record, hashes=hashes, **method)
        return change_until_saved(lambda: self.object_table.load(wanted.name), add, self.object_table.save, existing)

    def finish_upload(self, name: str, body: dict) -> dict:
        """finishUpload: the upload is complete; the object is immutable from now on."""
        check_name(name)
        hashes = body.get("hashes", {})

        def finish(record: ObjectRecord) -> ObjectRecord:
            if record.project_id != body["projectId"]:
                raise InvalidInput(f"projectId: object {name} does not have projectId {body['projectId']}")
            if record.finished:
                _merged(record.hashes, hashes, name, Conflict, adding=False)
                return record    # finished already: repeating the call is no error
            if record.upload_id != body["uploadId"]:
                raise Conflict(f"Object {name} does not have uploadId {body['uploadId']}")
            merged = _merged(record.hashes, hashes, name)
            size = self.blobs.size(blob_name(name))
            if size is None:
                raise Conflict(f"Object {name} cannot be finished: none of its data was uploaded")
            if record.content_length is not None and size != record.content_length:
                raise Conflict(f"Object {name} cannot be finished: {size} bytes were uploaded of the "
                               f"{record.content_length} announced")
            return replace(record, finished=True, hashes=merged, content_length=size)
        if change_until_saved(lambda: self.object_table.load(name), finish, self.object_table.save) is None:
            raise NotFound(f"Object {name} not found")
        return {}

    # -- download -------------------------------------------------------------------------
    def finished(self, name: str) -> ObjectRecord | None:
        record = self.object_table.load(name)
        return record if record is not None and record.finished else None

    def _finished(self, name: str) -> ObjectRecord:
        check_name(name)
        record = self.finished(name)
        if record is None:
            raise NotFound(f"Object {name} not found (or its upload is not finished)")
        return record

    def start_download(self, name: str, body: dict, now: datetime | None = None) -> dict:
        """startDownload: the best method the caller accepts, with what it needs."""
        now = now or utcnow()
        record = self._finished(name)
        method = next((method for method in DOWNLOAD_METHODS if method in body["acceptDownloadMethods"]), None)
        if method is None:
            raise NoMatchingMethod(f"acceptDownloadMethods: object {name} supports {', '.join(DOWNLOAD_METHODS)}")
        if method == "simple":
            return {"method": "simple", "url": self.download_url(name, now)}
        expires = now + GET_URL_LIFETIME
        url = self.blobs.download_url(blob_name(name), expires + URL_MARGIN)
        return {"method": "getUrl", "url": url, "expires": to_iso(expires), "hashes": record.hashes}

    def metadata(self, name: str) -> dict:
        record = self._finished(name)
        return {"projectId": record.project_id, "expires": record.expires, "hashes": record.hashes}

    def simple_download(self, name: str, now: datetime | None = None) -> str:
        """download: where the object's bytes are served (a URL valid for 30 minutes)."""
        self._finished(name)
        return self.download_url(name, now or utcnow())

    def download_url(self, name: str, now: datetime) -> str:
        """A URL serving a finished object's bytes, without reading its row (the caller
        knows it is finished)."""
        return self.blobs.download_url(blob_name(name), now + SIMPLE_URL_LIFETIME)

    # -- expiry -------------------------------------------------------------------------------
    def expire(self, name: str, now: datetime) -> bool:
        """Delete an object past its expiry, blob first; True if one was deleted."""
        record = self.object_table.load(name)
        if record is None or parse_iso(record.expires) > now:
            return False
        self.blobs.delete(blob_name(name))
        self.object_table.delete(name)   # last: while it exists, its index item is handled again
        return True


def check_name(name: str) -> None:
    if not 1 <= len(name) <= MAX_NAME or not _PRINTABLE.fullmatch(name):
        raise InvalidInput(f"name: {name[:100]!r} must be 1 to {MAX_NAME} printable ASCII characters")


def _inline_data(method: dict) -> bytes:
    try:
        data = base64.b64decode(method["objectData"], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("proposedUploadMethods.dataInline.objectData: not base64") from None
    if len(data) > MAX_INLINE_BYTES:
        raise InvalidInput(f"proposedUploadMethods.dataInline.objectData: more than {MAX_INLINE_BYTES} bytes")
    return data


def _with_hashes_of(data: bytes, given: dict) -> dict:
    """`given` hashes with those of `data`, which they must agree with."""
    computed = {"sha256": hashlib.sha256(data).hexdigest(), "sha512": hashlib.sha512(data).hexdigest()}
    for algorithm, value in computed.items():
        if given.get(algorithm, value) != value:
            raise InvalidInput(f"hashes.{algorithm}: {given[algorithm]} is not the {algorithm} of the data given")
    return {**given, **computed}


def _merged(existing: dict, given: dict, name: str, error=Conflict, adding: bool = True) -> dict:
    """`existing` hashes with `given` ones added; a different value for an algorithm (or,
    unless `adding`, a new algorithm) is refused with `error`."""
    for algorithm, value in given.items():
        if algorithm in existing and existing[algorithm] != value:
            raise error(f"hashes.{algorithm}: object {name} already has a different {algorithm} hash")
        if algorithm not in existing and not adding:
            raise error(f"hashes.{algorithm}: object {name} is finished without a {algorithm} hash")
    return {**existing, **given}
