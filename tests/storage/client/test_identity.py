"""An identity-based storage connection from the settings the Functions host reads."""

import pytest
from azure.identity import DefaultAzureCredential, ManagedIdentityCredential

from shared.storage.client.identity import IdentityConnection, identity_settings
from shared.storage.client.service_endpoint import ServiceEndpoint


def test_the_sections_properties_are_read_whatever_their_case():
    settings = {"AzureWebJobsStorage": "", "AzureWebJobsStorage__accountName": "acct",
                "azurewebjobsstorage__CREDENTIAL": "managedidentity", "AzureWebJobsStorage__clientId": "",
                "OtherConnection__accountName": "other"}
    assert identity_settings(settings) == {"accountname": "acct", "credential": "managedidentity"}


def test_an_account_name_gives_every_service_and_a_service_uri_wins():
    connection = IdentityConnection.from_settings({"accountName": "acct",
                                                   "tableServiceUri": "https://tables.example/"})
    assert connection.urls == {"blob": "https://acct.blob.core.windows.net", "queue": "https://acct.queue.core.windows.net",
                               "table": "https://tables.example"}


def test_what_is_missing_or_not_https_is_said():
    assert IdentityConnection.from_settings({"credential": "managedidentity"}) is None
    with pytest.raises(ValueError, match="AzureWebJobsStorage__tableServiceUri"):
        IdentityConnection.from_settings({"blobServiceUri": "https://b", "queueServiceUri": "https://q"})
    with pytest.raises(ValueError, match="HTTPS"):
        IdentityConnection.from_settings({"accountName": "a", "queueServiceUri": "http://127.0.0.1:1/a"})


def test_the_credential_is_the_one_the_properties_name():
    managed = IdentityConnection.from_settings({"accountName": "a", "credential": "managedidentity", "clientId": "c"})
    assert isinstance(managed.credential(), ManagedIdentityCredential)
    assert isinstance(IdentityConnection.from_settings({"accountName": "a"}).credential(), DefaultAzureCredential)
    assert managed.key != IdentityConnection.from_settings({"accountName": "a", "credential": "managedidentity"}).key


@pytest.mark.parametrize("url, expected", [
    ("https://acct.table.core.windows.net", ("acct.table.core.windows.net", 443, "", "acct")),
    ("https://127.0.0.1:10002/devstoreaccount1/", ("127.0.0.1", 10002, "/devstoreaccount1", "devstoreaccount1"))])
def test_a_service_url_gives_its_account_and_path(url, expected):
    endpoint = ServiceEndpoint.at(url, token=None)
    assert (endpoint.host, endpoint.port, endpoint.base_path, endpoint.account) == expected and endpoint.key is None
