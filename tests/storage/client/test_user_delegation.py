"""User delegation SAS signed by our own code in version 2020-12-06's layout (which Azure's
service honours as written, and Azurite 3.35 checks): against Azurite in OAuth mode, and the
layout line by line."""

from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

import requests
from azure.storage.blob import BlobServiceClient, UserDelegationKey, generate_blob_sas

from shared.storage.client.user_delegation import (KEY_MARGIN, SIGNED_VERSION, DelegationKeys, blob_sas,
                                                   signature, string_to_sign)
from tests.conftest import unique_prefix


def key(**fields) -> UserDelegationKey:
    made = UserDelegationKey()
    made.signed_oid, made.signed_tid = "oid-1", "tid-1"
    made.signed_start, made.signed_expiry = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    made.signed_service, made.signed_version, made.value = "b", "2025-11-05", "a2V5LXZhbHVl"
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_the_string_to_sign_is_version_2020_12_06s():
    query = parse_qs(blob_sas(key(), "acct", "artifacts", "t/a/0/x y", "r", datetime(2026, 1, 1, 1, tzinfo=timezone.utc)))
    fields = {name: values[0] for name, values in query.items()}
    assert fields["sv"] == SIGNED_VERSION == "2020-12-06" and fields["sr"] == "b" and fields["skv"] == "2025-11-05"
    text = string_to_sign(fields, "/blob/acct/artifacts/t/a/0/x y")
    assert text.split("\n") == ["r", "", "2026-01-01T01:00:00Z", "/blob/acct/artifacts/t/a/0/x y", "oid-1", "tid-1",
                                "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "b", "2025-11-05", "", "", "", "", "",
                                "2020-12-06", "b", "", "", "", "", "", "", ""]
    assert fields["sig"] == signature("a2V5LXZhbHVl", text)


def test_the_sdks_own_signature_differs_for_the_same_fields():
    """azure-storage-blob signs its newest layout whatever `sv` it is given (the lines Azurite
    3.35 does not know): why the signing is ours."""
    expiry = datetime(2026, 1, 1, 1, tzinfo=timezone.utc)
    ours = parse_qs(blob_sas(key(), "acct", "c", "b", "r", expiry))["sig"][0]
    sdks = parse_qs(generate_blob_sas("acct", "c", "b", user_delegation_key=key(), permission="r", expiry=expiry,
                                      version=SIGNED_VERSION))["sig"][0]
    assert ours != sdks


def test_a_key_is_asked_for_once_and_again_when_a_url_would_outlive_it(oauth_azurite, storage_credential):
    service = BlobServiceClient(oauth_azurite.endpoint("blob"), credential=storage_credential,
                                connection_verify=str(oauth_azurite.certificate))
    asked = []
    real = service.get_user_delegation_key
    service.get_user_delegation_key = lambda start, expiry: asked.append(expiry) or real(start, expiry)
    keys = DelegationKeys(service)
    now = datetime.now(timezone.utc)
    first = keys.valid_until(now + timedelta(minutes=45))
    assert keys.valid_until(now + timedelta(hours=2)) is first and len(asked) == 1
    later = keys.valid_until(now + timedelta(days=3))
    assert len(asked) == 2 and later is not first and asked[1] >= now + timedelta(days=3) + KEY_MARGIN


def test_a_url_signed_with_it_reads_the_blob_and_nothing_else(oauth_azurite, storage_credential):
    service = BlobServiceClient(oauth_azurite.endpoint("blob"), credential=storage_credential,
                                connection_verify=str(oauth_azurite.certificate))
    container = unique_prefix()
    service.create_container(container).upload_blob("public/x.txt", b"hello")
    expiry = datetime.now(timezone.utc) + timedelta(minutes=5)
    sas = blob_sas(DelegationKeys(service).valid_until(expiry), service.account_name, container, "public/x.txt", "r",
                   expiry)
    url = f"{oauth_azurite.endpoint('blob')}/{container}/public/x.txt"
    trust = str(oauth_azurite.certificate)
    assert requests.get(f"{url}?{sas}", verify=trust).content == b"hello"
    tampered = sas.replace("sp=r", "sp=rw")
    assert requests.get(f"{url}?{tampered}", verify=trust).status_code == 403
    assert requests.put(f"{url}?{sas}", data=b"x", headers={"x-ms-blob-type": "BlockBlob"}, verify=trust).status_code == 403
