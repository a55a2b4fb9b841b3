"""The blob port's contract, side by side on Azurite's Blob service and on the in-memory
store the service tests use; then what only the real signed URLs can show (what they let
a plain HTTP client do, and what they refuse). The real store twice: signed in with the
account key (service SAS URLs), and with an identity on Azurite in OAuth mode (user
delegation SAS URLs, signed by `user_delegation`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests

from shared.domain.timestamps import utcnow
from shared.storage.client.account import OperationCounter, StorageAccount, shared_transport
from shared.storage.client.blobs import AzureBlobStore, blob_service
from shared.storage.client.identity import IdentityConnection
from shared.storage.client.tokens import shared_token
from shared.storage.client.user_delegation import DelegationKeys
from tests.conftest import identity_account, identity_properties, unique_prefix
from tests.memory_storage import MemoryBlobStore

SOON = timedelta(minutes=5)


@pytest.fixture(params=["azurite", "identity", "memory"])
def blobs(request):
    # Each store counts its own requests (`.requests`): the process-wide counter also counts
    # those of other tests' services whose background threads are still finishing.
    counter = OperationCounter()
    if request.param == "memory":
        store = MemoryBlobStore("contract", counter)
    elif request.param == "identity":
        azurite, store = request.getfixturevalue("identity_blobs")
        connection = IdentityConnection.from_settings(identity_properties(azurite))
        service = blob_service(url=connection.urls["blob"], credential=shared_token(connection.key, connection.credential),
                               transport=shared_transport(), operation_counter=counter)
        store = AzureBlobStore(service, store.container, DelegationKeys(service))
        store.verify = str(azurite.certificate)
    else:
        store = AzureBlobStore(blob_service(request.getfixturevalue("azurite").connection_string,
                                            operation_counter=counter), f"{unique_prefix()}-contract")
    store.requests = counter
    return store


@pytest.fixture
def identity_blobs(oauth_azurite, identity_endpoint, monkeypatch):
    """(Azurite in OAuth mode, a container of it reached with the identity)."""
    account = identity_account(oauth_azurite, identity_endpoint, monkeypatch)
    return oauth_azurite, account.blobs(f"{unique_prefix()}-contract")


@pytest.fixture(params=["key", "identity"])
def azure_blobs(request):
    if request.param == "identity":
        azurite, store = request.getfixturevalue("identity_blobs")
        store.verify = str(azurite.certificate)
        return store
    return StorageAccount(request.getfixturevalue("azurite").connection_string).blobs(f"{unique_prefix()}-contract")


def verify(blobs):
    """What a client must trust to reach the store's URLs (Azurite's own certificate in OAuth mode)."""
    return getattr(blobs, "verify", True)


def put_to(blobs, url: str, data: bytes, headers: dict) -> None:
    """What a client does with an upload URL."""
    if isinstance(blobs, MemoryBlobStore):
        blobs.upload_to(url, data, headers) if "use=put" in url else blobs.stage_block_at(url, data)
    else:
        response = requests.put(url, data=data, headers=headers, timeout=30, verify=verify(blobs))
        assert response.status_code == 201, response.text


def get_at(blobs, url: str) -> tuple[bytes | None, str | None]:
    """What a client gets from a download URL: the bytes and their content type."""
    if isinstance(blobs, MemoryBlobStore):
        key = blobs._key(url, "get")
        return blobs.read_at(url), blobs.content_type(key)
    response = requests.get(url, timeout=30, verify=verify(blobs))
    return (response.content, response.headers["Content-Type"]) if response.status_code == 200 else (None, None)


def test_put_read_size_list_delete(blobs):
    assert blobs.read("t/a/0/x") is None and blobs.size("t/a/0/x") is None
    blobs.put("t/a/0/x", b"hello", "text/plain")
    blobs.put("t/a/1/y", b"", "application/json")
    blobs.put("t/b/0/z", b"z", "text/plain")
    assert blobs.read("t/a/0/x") == b"hello" and blobs.size("t/a/0/x") == 5 and blobs.size("t/a/1/y") == 0
    assert blobs.keys("t/a/") == ["t/a/0/x", "t/a/1/y"]
    blobs.delete("t/a/0/x")
    blobs.delete("t/a/0/x")              # deleting twice is no error
    assert blobs.read("t/a/0/x") is None and blobs.keys("t/a/") == ["t/a/1/y"]


def test_each_blob_request_is_one_counted_round_trip(blobs):
    blobs.put("t/a/0/x", b"hello", "text/plain")     # the container exists
    before = blobs.requests.value
    blobs.put("t/a/0/x", b"hello", "text/plain")
    blobs.size("t/a/0/x")
    blobs.delete("t/a/0/x")
    assert blobs.requests.value - before == 3           # as the benchmarks count them


def test_many_blobs_are_deleted_in_one_request_and_missing_ones_are_no_error(blobs):
    keys = [f"t/a/{run}/public/results.json" for run in range(3)]
    for key in keys[:2]:
        blobs.put(key, b"{}", "application/json")
    blobs.put("t/b/0/public/results.json", b"{}", "application/json")
    before = blobs.requests.value
    blobs.delete_many(keys)
    assert blobs.requests.value - before == 1
    blobs.delete_many(keys)                          # again: no error
    blobs.delete_many([])
    assert blobs.keys("t/") == ["t/b/0/public/results.json"]


def test_a_batch_takes_256_blobs_at_most_and_a_new_container_is_no_error(blobs):
    blobs.delete_many(["t/x/0/public/results.json"])
    before = blobs.requests.value
    blobs.delete_many([f"t/x/{run}/public/results.json" for run in range(257)])
    assert blobs.requests.value - before == 2


def test_an_upload_url_takes_one_put_with_its_headers(blobs):
    url, headers = blobs.upload_url("t/a/0/public/x.bin", "application/x-thing", 3, utcnow() + SOON)
    assert headers == {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/x-thing", "Content-Length": "3"}
    put_to(blobs, url, b"abc", headers)
    assert get_at(blobs, blobs.download_url("t/a/0/public/x.bin", utcnow() + SOON)) == (b"abc", "application/x-thing")


def test_a_block_url_takes_a_plain_put_which_commit_makes_the_blob(blobs):
    key = "t/a/0/public/old worker.txt"
    assert blobs.commit_block(key, "text/plain") is None           # nothing uploaded
    put_to(blobs, blobs.block_upload_url(key, utcnow() + SOON), b"from s3", {"Content-Type": "text/plain"})
    assert blobs.size(key) is None                                  # staged, not yet a blob
    assert blobs.commit_block(key, "text/plain") == 7
    assert blobs.commit_block(key, "text/plain") == 7               # committed before: still there
    assert get_at(blobs, blobs.download_url(key, utcnow() + SOON)) == (b"from s3", "text/plain")


def test_odd_names_round_trip(blobs):
    for key in ("t/a/0/a b/c?d#e%f&g=h+i", "t/a/0/..~/x.~/~", "t/a/0/~7E"):
        blobs.put(key, key.encode(), "text/plain")
        assert get_at(blobs, blobs.download_url(key, utcnow() + SOON))[0] == key.encode()


# -- what only the real signed URLs show ---------------------------------------------------------
def test_a_plain_put_to_a_blob_url_is_refused_which_is_why_s3_uploads_stage_a_block(azure_blobs):
    url, _ = azure_blobs.upload_url("t/a/0/x", "text/plain", 1, utcnow() + SOON)
    assert requests.put(url, data=b"x", headers={"Content-Type": "text/plain"}, verify=verify(azure_blobs)).status_code == 400


def test_a_url_is_for_its_own_blob_and_its_own_permission(azure_blobs):
    url, headers = azure_blobs.upload_url("t/a/0/x", "text/plain", 1, utcnow() + SOON)
    other = url.replace("/t/a/0/x?", "/t/a/0/y?")
    trust = verify(azure_blobs)
    assert requests.put(other, data=b"y", headers=headers, verify=trust).status_code == 403
    azure_blobs.put("t/a/0/x", b"x", "text/plain")
    read = azure_blobs.download_url("t/a/0/x", utcnow() + SOON)
    assert requests.put(read, data=b"z", headers=headers, verify=trust).status_code == 403
    assert requests.get(read.replace("/t/a/0/x?", "/t/a/0/y?"), verify=trust).status_code == 403
    assert azure_blobs.read("t/a/0/x") == b"x"


def test_an_expired_url_is_refused(azure_blobs):
    azure_blobs.put("t/a/0/x", b"x", "text/plain")
    assert requests.get(azure_blobs.download_url("t/a/0/x", utcnow() - timedelta(seconds=1)),
                        verify=verify(azure_blobs)).status_code == 403
