"""The table client: where a connection string points it and how it signs, and what it
sends again. Its calls' semantics are held to the in-memory fake's by `test_contract`."""

from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import ResourceNotFoundError, ServiceResponseError
from azure.data.tables import AccountSasPermissions, ResourceTypes, generate_account_sas

from shared.domain.ids import new_slugid
from shared.storage.client import connections as connections_module
from shared.storage.client.account import AZURITE_CONNECTION, OPERATIONS, StorageAccount
from shared.storage.client.connections import Answer
from shared.storage.client.table_endpoint import TableEndpoint
from tests.conftest import unique_prefix

_ACCOUNT_KEY = AZURITE_CONNECTION.split("AccountKey=")[1].split(";")[0]


def test_an_azure_connection_string_names_the_account_host():
    endpoint = TableEndpoint.parse("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + _ACCOUNT_KEY +
                                   ";EndpointSuffix=core.windows.net")
    assert (endpoint.origin, endpoint.base_path, endpoint.account) == \
        ("https://acme.table.core.windows.net:443", "", "acme")
    headers = endpoint.headers("GET", "/Tasks()")
    assert headers["Authorization"].startswith("SharedKey acme:") and headers["x-ms-date"].endswith("GMT")


def test_the_emulator_is_addressed_by_path():
    endpoint = TableEndpoint.parse(AZURITE_CONNECTION)
    assert (endpoint.origin, endpoint.base_path, endpoint.account) == \
        ("http://127.0.0.1:10002", "/devstoreaccount1", "devstoreaccount1")


def test_a_connection_string_without_a_key_or_signature_is_refused():
    with pytest.raises(ValueError, match="AccountKey"):
        TableEndpoint.parse("DefaultEndpointsProtocol=https;AccountName=acme")


def test_a_shared_access_signature_is_sent_instead_of_a_signature(azurite):
    sas = generate_account_sas(AzureNamedKeyCredential("devstoreaccount1", _ACCOUNT_KEY),
                               ResourceTypes(service=True, container=True, object=True),
                               AccountSasPermissions(read=True, write=True, add=True, update=True, delete=True,
                                                     list=True),
                               datetime.now(timezone.utc) + timedelta(hours=1))
    table_endpoint = azurite.connection_string.split("TableEndpoint=")[1].split(";")[0]
    assert "Authorization" not in TableEndpoint.parse(f"TableEndpoint={table_endpoint};SharedAccessSignature={sas}")\
        .headers("GET", "/Tasks()")
    table = StorageAccount(f"TableEndpoint={table_endpoint};SharedAccessSignature={sas}", unique_prefix()).table("Rows")
    partition = new_slugid()
    table.upsert_entity({"PartitionKey": partition, "RowKey": "a", "n": 1})
    assert table.get_entity(partition, "a")["n"] == 1


class Scripted:
    """Answers a table's requests from a script (Azurite is never busy on demand)."""

    def __init__(self, *answers):
        self.answers, self.sent = list(answers), []

    def send(self, method, target, body, headers):
        self.sent.append(method)
        return self.answers.pop(0)


BUSY = Answer(503, "Server Busy", {}, b'{"odata.error":{"code":"ServerBusy","message":{"value":"busy"}}}')
TIMED_OUT = Answer(500, "Operation could not be completed within the specified time.", {},
                   b'{"odata.error":{"code":"OperationTimedOut","message":{"value":"timed out"}}}')
MISSING = Answer(404, "Not Found", {}, b'{"odata.error":{"code":"ResourceNotFound","message":{"value":"gone"}}}')


@pytest.fixture
def scripted_table(azurite, monkeypatch):
    monkeypatch.setattr(connections_module.time, "sleep", lambda seconds: None)
    return StorageAccount(azurite.connection_string, unique_prefix()).table("Rows")


def test_a_read_storage_was_too_busy_for_is_sent_again_and_counted_once(scripted_table, monkeypatch):
    script = Scripted(BUSY, BUSY, MISSING)
    monkeypatch.setattr(scripted_table, "_connections", script)
    before = OPERATIONS.value
    with pytest.raises(ResourceNotFoundError) as refused:
        scripted_table.get_entity("p", "r")
    assert script.sent == ["GET"] * 3 and OPERATIONS.value == before + 1
    assert refused.value.error_code == "ResourceNotFound" and refused.value.status_code == 404


def test_an_insert_storage_timed_out_on_is_left_to_its_caller_to_settle(scripted_table, monkeypatch):
    """Azure's 500 OperationTimedOut may come after the write was applied: as for a lost
    answer, `lost_responses` reads the row back instead of sending it again."""
    script = Scripted(TIMED_OUT)
    monkeypatch.setattr(scripted_table, "_connections", script)
    with pytest.raises(ServiceResponseError):
        scripted_table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    assert script.sent == ["POST"]


def test_an_insert_storage_refused_as_busy_is_sent_again(scripted_table, monkeypatch):
    """503 ServerBusy (Azure's throttling) refuses a request before carrying it out: even
    an insert is safe to send again."""
    script = Scripted(BUSY, BUSY, Answer(204, "No Content", {"ETag": 'W/"1"'}, b""))
    monkeypatch.setattr(scripted_table, "_connections", script)
    assert scripted_table.create_entity({"PartitionKey": "p", "RowKey": "r"}) == {"etag": 'W/"1"'}
    assert script.sent == ["POST"] * 3
