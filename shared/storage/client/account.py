"""One storage account: its table, queue and blob clients, created once per process, reached
with the account key (or a shared access signature) of a connection string, or with the
app's identity (`identity`: no key anywhere)."""

from __future__ import annotations

import itertools
import logging
import threading
import urllib.request

import requests
from azure.core.exceptions import ResourceExistsError
from azure.core.pipeline.policies import SansIOHTTPPolicy
from azure.core.pipeline.transport import RequestsTransport

from shared.config import DEVELOPMENT_STORAGE
from shared.storage.client.blobs import AzureBlobStore, blob_service
from shared.storage.client.connections import Connections, trusted_certificates
from shared.storage.client.identity import IdentityConnection
from shared.storage.client.message_queue import MessageQueue
from shared.storage.client.queue_endpoint import QueueEndpoint
from shared.storage.client.table import Table
from shared.storage.client.table_endpoint import TableEndpoint
from shared.storage.client.tokens import shared_token
from shared.storage.client.user_delegation import DelegationKeys

# The SDK's HTTP logging policy logs every request and answer, headers and all, at INFO: in a
# Function App (whose log level is Information) a log line or two per storage round trip,
# each formatted at a cost. Our own log lines say what happened to which task instead.
logging.getLogger("azure.core.pipeline.policies.http_logging_policy").setLevel(logging.WARNING)

_AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURITE_CONNECTION = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + _AZURITE_KEY + ";"
    "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    "QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"
    "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
)


class OperationCounter(SansIOHTTPPolicy):
    """Counts every request sent to storage, so benchmarks can report operations per task."""

    def __init__(self) -> None:
        self._count = itertools.count()
        self._seen = 0

    def on_request(self, request) -> None:
        self._seen = next(self._count) + 1

    @property
    def value(self) -> int:
        return self._seen


OPERATIONS = OperationCounter()


# Connections kept open per account. Many threads share its clients (claimWork long-polls and
# claims its runs concurrently, a creation runs its steps at once, a resolution its parts,
# creation pools of 16); with requests' default of 10 per client, busy threads opened and
# discarded connections by the hundred, each a new handshake and a new chance of a reset.
POOL_SIZE = 128


def shared_transport() -> RequestsTransport:
    """One connection pool for every blob client of an account (tables and queues have
    their own: see `table` and `message_queue`)."""
    session = requests.Session()
    # Unless a proxy is configured, requests' look-ups per request (~/.netrc, the proxy
    # environment) only cost: about a tenth of a busy host's CPU in the graph benchmark.
    session.trust_env = _proxied()
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=POOL_SIZE)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    # Its certificates to trust as our own connections' are (the SDK's client option is not
    # read when the client is given a transport).
    return RequestsTransport(session=session, session_owner=False, connection_verify=trusted_certificates())


def _proxied() -> bool:
    """Whether a proxy is configured (NO_PROXY alone configures none)."""
    return any(scheme != "no" for scheme in urllib.request.getproxies())


def resolve_connection(connection: str) -> str:
    return AZURITE_CONNECTION if connection.strip() == DEVELOPMENT_STORAGE else connection


class StorageAccount:
    """Tables, queues and blob containers by logical name; `prefix` keeps test runs apart
    in one account (a container's name comes from an app setting, like a queue's). Reached
    with `connection` (a connection string), or, when that is empty, with the identity the
    connection's properties `identity` name (`AzureWebJobsStorage__*`, see `identity`)."""

    def __init__(self, connection: str, prefix: str = "", identity: dict[str, str] | None = None) -> None:
        signed_in = IdentityConnection.from_settings(identity or {}) if not connection.strip() else None
        self.connection = "" if signed_in else resolve_connection(connection or DEVELOPMENT_STORAGE)
        self.prefix = prefix
        self._tables: dict[str, Table] = {}
        self._queues: dict[str, MessageQueue] = {}
        self._containers: dict[str, AzureBlobStore] = {}
        self._lock = threading.Lock()
        self._transport = shared_transport()
        if signed_in:
            token = shared_token(signed_in.key, signed_in.credential)
            self._table_endpoint = TableEndpoint.at(signed_in.urls["table"], token)
            self._queue_endpoint = QueueEndpoint.at(signed_in.urls["queue"], token)
        else:
            self._table_endpoint = TableEndpoint.parse(self.connection)
            self._queue_endpoint = QueueEndpoint.parse(self.connection)
        self._blob_sign_in = (signed_in.urls["blob"], token) if signed_in else None
        self._blob_service: tuple | None = None   # (its client, its delegation keys if signed in), on first use
        self._table_connections = Connections(self._table_endpoint.scheme, self._table_endpoint.host,
                                              self._table_endpoint.port, POOL_SIZE)
        self._queue_connections = Connections(self._queue_endpoint.scheme, self._queue_endpoint.host,
                                              self._queue_endpoint.port, POOL_SIZE)

    def table(self, name: str) -> Table:
        """The table `<prefix><name>`, created on first use in this process."""
        with self._lock:
            client = self._tables.get(name)
            if client is None:
                client = Table(self._table_endpoint, self._table_connections, self.prefix + name, OPERATIONS)
                try:
                    client.create_table()
                except ResourceExistsError:
                    pass
                self._tables[name] = client
            return client

    def queue(self, name: str) -> MessageQueue:
        """The storage queue `name`, created on first use; names come from app settings
        because queue-triggered functions bind to them by name."""
        with self._lock:
            queue = self._queues.get(name)
            if queue is None:
                queue = self._queues[name] = MessageQueue(self._queue_endpoint, self._queue_connections, name,
                                                          OPERATIONS)
            return queue

    def blobs(self, container: str) -> AzureBlobStore:
        """The blob container `container`, created on first use."""
        with self._lock:
            store = self._containers.get(container)
            if store is None:
                store = self._containers[container] = AzureBlobStore(*self._blob_client(container))
            return store

    def _blob_client(self, container: str) -> tuple:
        """AzureBlobStore's arguments for `container`. The account's Blob service client is made
        on first use (a connection string may name no blob endpoint), with its user
        delegation keys when signed in with an identity."""
        if self._blob_service is None:
            if self._blob_sign_in:
                url, token = self._blob_sign_in
                service = blob_service(url=url, credential=token, transport=self._transport, operation_counter=OPERATIONS)
                self._blob_service = (service, DelegationKeys(service))
            else:
                self._blob_service = (blob_service(self.connection, transport=self._transport,
                                                   operation_counter=OPERATIONS), None)
        return self._blob_service[0], container, self._blob_service[1]
