"""Azurite in its OAuth mode (`Azurite(oauth=True)`): Azure's SDK clients signed in with a
token credential (`devhost.azurite_tokens.AzuriteCredential`, the stand-in for the app's
managed identity) over HTTPS, trusting the certificate made at its start; and what it refuses."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import requests
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.data.tables import TableServiceClient
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from devhost.azurite_tokens import STORAGE_SCOPE, AzuriteCredential, claims_of
from tests.conftest import unique_prefix


def test_a_table_client_signed_in_with_the_credential_reads_and_writes(oauth_azurite, storage_credential):
    service = TableServiceClient(oauth_azurite.endpoint("table"), credential=storage_credential,
                                 connection_verify=str(oauth_azurite.certificate))
    table = service.create_table(unique_prefix())
    table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    table.upsert_entity({"PartitionKey": "p", "RowKey": "s", "n": 2})
    assert sorted(row["n"] for row in table.query_entities("PartitionKey eq 'p'")) == [1, 2]
    assert storage_credential.issued == 1          # the client keeps its token while it is valid


def test_blobs_and_a_user_delegation_key_with_the_credential(oauth_azurite, storage_credential):
    """A user delegation key is what user delegation SAS are signed with; Azurite hands it to
    the identity the token names. (A SAS signed with it by azure-storage-blob 12.31 is
    refused by Azurite 3.35: the SDK signs two lines, srh and srq, that Azurite's newest
    format, 2025-07-05, does not have.)"""
    service = BlobServiceClient(oauth_azurite.endpoint("blob"), credential=storage_credential,
                                connection_verify=str(oauth_azurite.certificate))
    container = service.create_container(unique_prefix())
    container.upload_blob("public/log.txt", b"hello")
    assert container.download_blob("public/log.txt").readall() == b"hello"
    now = datetime.now(timezone.utc)
    key = service.get_user_delegation_key(now - timedelta(minutes=1), now + timedelta(hours=1))
    assert key.signed_oid == storage_credential.object_id and key.value


def test_queues_with_the_credential(oauth_azurite, storage_credential):
    queue = QueueClient(oauth_azurite.endpoint("queue"), f"{unique_prefix()}-q", credential=storage_credential,
                        connection_verify=str(oauth_azurite.certificate))
    queue.create_queue()
    queue.send_message("hint")
    assert [message.content for message in queue.receive_messages()] == ["hint"]


def test_a_token_for_another_resource_is_refused(oauth_azurite):
    class OtherResource(AzuriteCredential):
        def get_token(self, *scopes, **kwargs):
            return super().get_token("https://vault.azure.net/.default")
    service = TableServiceClient(oauth_azurite.endpoint("table"), credential=OtherResource(),
                                 connection_verify=str(oauth_azurite.certificate), retry_total=0)
    with pytest.raises(ClientAuthenticationError):
        service.create_table(unique_prefix())


def test_an_expired_token_is_refused_and_a_client_asks_for_a_new_one(oauth_azurite):
    expired = AzuriteCredential(lifetime=-60)
    service = TableServiceClient(oauth_azurite.endpoint("table"), credential=expired,
                                 connection_verify=str(oauth_azurite.certificate), retry_total=0)
    with pytest.raises(ClientAuthenticationError):
        service.create_table(unique_prefix())
    assert expired.issued >= 1


def test_the_certificate_is_the_only_one_trusted(oauth_azurite):
    with pytest.raises((requests.exceptions.SSLError, HttpResponseError)):
        requests.get(oauth_azurite.endpoint("blob") + "?comp=list", timeout=10)   # the system's trust store: no


def test_tokens_carry_the_claims_azurite_checks():
    access = AzuriteCredential(lifetime=600).get_token(STORAGE_SCOPE)
    claims = claims_of(access.token)
    assert claims["aud"] == "https://storage.azure.com"
    assert claims["iss"].startswith("https://sts.windows.net/") and claims["iss"].endswith("/")
    assert claims["nbf"] <= claims["iat"] < claims["exp"] == access.expires_on
    assert access.token.endswith(".")             # unsigned: Azurite does not check a signature
    with pytest.raises(ValueError):
        AzuriteCredential().get_token()
