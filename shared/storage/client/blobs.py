"""Blob Storage, narrowly: the few operations artifacts need, and signed URLs with which
clients move the bytes themselves, so that no artifact's bytes pass through a Function.

One container; keys are blob names (see `keys.blob_name`). A signed URL is a SAS for one
blob, with only the permission its use needs, valid for minutes: a service SAS signed with
the account key, or, where the app signs in with its identity (no key), a user delegation
SAS (`user_delegation`). Two ways in:
- `upload_url`: Put Blob, whose `headers` (the blob type, content type and length) the
  client sends as told, as Taskcluster's upload helpers do (up to 5,000 MiB per PUT);
- `block_upload_url`: Put Block of one fixed block id, which takes a plain `PUT` with no
  `x-ms-blob-type` header, as older workers send to an `s3` artifact's `putUrl` (up to
  4,000 MiB, one block); the uploaded block becomes the blob when `commit_block` is called.
"""

from __future__ import annotations

import threading
from datetime import datetime
from urllib.parse import quote

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.blob import BlobBlock, BlobSasPermissions, BlobServiceClient, ContentSettings, generate_blob_sas

from shared.storage.client.connections import trusted_certificates
from shared.storage.client.user_delegation import DelegationKeys, blob_sas

# The block an `s3` upload stages; six bytes, so its base64 (the URL's `blockid`) has no padding.
BLOCK_ID = "single"
BLOCK_ID_IN_URL = "c2luZ2xl"
MAX_PUT_BYTES = 5000 * 1024 * 1024     # Put Blob's limit (Azure, API versions since 2019-12-12)
MAX_BLOCK_BYTES = 4000 * 1024 * 1024   # Put Block's
MAX_BATCH = 256                        # subrequests in one Blob Batch request


def blob_service(connection: str | None = None, url: str = "", credential=None, transport=None,
                 operation_counter=None) -> BlobServiceClient:
    """The Blob service of the account the connection string names, or at `url` signed in
    with `credential` (a token credential); every request seen by `operation_counter`."""
    options = {"transport": transport} if transport else {"connection_verify": trusted_certificates()}
    # The blob SDK takes no per-call policies (it drops them): its request hook counts
    # each request, as the queues' does.
    if operation_counter:
        options["raw_request_hook"] = operation_counter.on_request
    if connection:
        return BlobServiceClient.from_connection_string(connection, **options)
    return BlobServiceClient(url, credential=credential, **options)


class AzureBlobStore:
    """The blobs of one container of an account's Blob service (`blob_service`); `keys`: its
    user delegation keys, when it is signed in without an account key (shared by its
    containers)."""

    def __init__(self, service: BlobServiceClient, container: str, keys: DelegationKeys | None = None) -> None:
        self._service = service
        self._keys = keys
        self._container = self._service.get_container_client(container)
        self.container = container
        self._ready = False
        self._lock = threading.Lock()

    def _blob(self, key: str):
        if not self._ready:
            with self._lock:
                if not self._ready:
                    try:
                        self._container.create_container()
                    except ResourceExistsError:
                        pass
                    self._ready = True
        return self._container.get_blob_client(key)

    def put(self, key: str, data: bytes, content_type: str) -> None:
        self._blob(key).upload_blob(data, overwrite=True, content_settings=ContentSettings(content_type=content_type))

    def read(self, key: str) -> bytes | None:
        try:
            return self._blob(key).download_blob().readall()
        except ResourceNotFoundError:
            return None

    def size(self, key: str) -> int | None:
        """The blob's length, or None if it does not exist."""
        try:
            return self._blob(key).get_blob_properties().size
        except ResourceNotFoundError:
            return None

    def delete(self, key: str) -> None:
        """Delete the blob (and any block staged for it); a missing blob is no error."""
        try:
            self._blob(key).delete_blob()
        except ResourceNotFoundError:
            pass

    def delete_many(self, keys: list[str]) -> None:
        """Delete blobs by name, up to 256 in one request (a Blob Batch); missing ones are no error."""
        for start in range(0, len(keys), MAX_BATCH):
            self._blob(keys[start])   # the container exists
            answers = self._container.delete_blobs(*keys[start:start + MAX_BATCH], raise_on_any_failure=False)
            failed = [answer for answer in answers if answer.status_code not in (202, 404)]
            if failed:
                raise HttpResponseError(f"deleting {len(failed)} blobs failed: HTTP {failed[0].status_code}",
                                        response=failed[0])

    def keys(self, prefix: str) -> list[str]:
        self._blob(prefix)   # the container exists
        return [blob.name for blob in self._container.list_blobs(name_starts_with=prefix)]

    def commit_block(self, key: str, content_type: str) -> int | None:
        """Make the block staged through `block_upload_url` the blob; its length, or None if
        no block was uploaded (nor the blob made before)."""
        try:
            self._blob(key).commit_block_list([BlobBlock(block_id=BLOCK_ID)],
                                              content_settings=ContentSettings(content_type=content_type))
        except HttpResponseError as error:
            if error.error_code != "InvalidBlockList":
                raise
            return self.size(key)   # committed before (no block left), or nothing uploaded
        return self.size(key)

    def upload_url(self, key: str, content_type: str, content_length: int, expires: datetime) -> tuple[str, dict]:
        """A URL for one PUT of the whole blob, and the headers that PUT must carry."""
        url = self._signed(key, BlobSasPermissions(create=True, write=True), expires)
        return url, {"x-ms-blob-type": "BlockBlob", "Content-Type": content_type,
                     "Content-Length": str(content_length)}

    def block_upload_url(self, key: str, expires: datetime) -> str:
        """A URL that takes a plain PUT of the whole content as the blob's one block."""
        url = self._signed(key, BlobSasPermissions(write=True), expires)
        return f"{url}&comp=block&blockid={quote(BLOCK_ID_IN_URL, safe='')}"

    def download_url(self, key: str, expires: datetime) -> str:
        return self._signed(key, BlobSasPermissions(read=True), expires)

    def _signed(self, key: str, permission: BlobSasPermissions, expires: datetime) -> str:
        blob = self._blob(key)
        if self._keys is not None:
            token = blob_sas(self._keys.valid_until(expires), self._service.account_name, self.container, key,
                             str(permission), expires)
        else:
            token = generate_blob_sas(self._service.account_name, self.container, key,
                                      account_key=self._service.credential.account_key,
                                      permission=permission, expiry=expires)
        return f"{blob.url}?{token}"
