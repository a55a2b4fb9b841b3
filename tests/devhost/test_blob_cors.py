"""Azurite's blob CORS rule, as the local host sets it when it starts: a web page may then read
a signed blob URL (the browser view's logs), as infra/main.bicep lets it in Azure."""

from __future__ import annotations

import re

import requests
from azure.storage.blob import BlobServiceClient, CorsRule

from devhost import blob_cors
from tests.conftest import start_server
from tests.infra.test_main_bicep import BICEP, resource

ORIGIN = "http://127.0.0.1:7071"


def _cors(connection: str) -> list:
    return BlobServiceClient.from_connection_string(connection).get_service_properties()["cors"]


def test_the_host_gives_azurite_the_rule_and_a_page_may_read_a_blob(own_azurite, tmp_path):
    assert _cors(own_azurite.connection_string) == []   # Azurite starts with none
    server = start_server(own_azurite, tmp_path)
    try:
        log = server.log_path.read_text()
        assert "Azurite's blobs are now readable by web pages" in log
    finally:
        server.stop()
    service = BlobServiceClient.from_connection_string(own_azurite.connection_string)
    blob = service.create_container("cors-check").upload_blob("a.txt", b"hello")
    preflight = requests.options(blob.url, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"},
                                 timeout=10)
    assert preflight.status_code == 200 and preflight.headers["Access-Control-Allow-Origin"] == ORIGIN
    read = requests.get(blob.url, headers={"Origin": ORIGIN}, timeout=10)   # unsigned: refused, but readable
    assert read.headers["Access-Control-Allow-Origin"] == "*"


def test_setting_it_again_or_beside_another_rule_keeps_one_of_each(own_azurite):
    connection = own_azurite.connection_string
    theirs = CorsRule(["https://example.com"], ["PUT"])
    BlobServiceClient.from_connection_string(connection).set_service_properties(cors=[theirs])
    assert blob_cors.allow_browser_reads(connection) and blob_cors.allow_browser_reads(connection)
    rules = _cors(connection)
    assert sorted(rule.allowed_origins for rule in rules) == ["*", "https://example.com"]


def test_an_account_that_is_not_azurite_is_left_alone():
    azure = "DefaultEndpointsProtocol=https;AccountName=myqueuestore;AccountKey=a2V5;EndpointSuffix=core.windows.net"
    assert not blob_cors.is_azurite(azure) and not blob_cors.allow_browser_reads(azure)   # no call made
    assert blob_cors.is_azurite("UseDevelopmentStorage=true")


def test_the_rule_is_the_one_bicep_gives_the_account_in_azure():
    rule = resource("blobService")
    listed = lambda key: re.findall(r"'([^']+)'", re.search(rf"{key}: \[([^\]]*)\]", rule).group(1))  # noqa: E731
    assert listed("allowedMethods") == blob_cors.METHODS
    assert listed("allowedHeaders") == blob_cors.ALLOWED_HEADERS
    assert listed("exposedHeaders") == blob_cors.EXPOSED_HEADERS
    assert f"maxAgeInSeconds: {blob_cors.MAX_AGE_SECONDS}" in rule and "allowedOrigins: artifactReadOrigins" in rule
    assert "param artifactReadOrigins array = ['*']" in BICEP and blob_cors.ORIGINS == ["*"]
