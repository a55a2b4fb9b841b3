"""One storage account: its table and queue clients, created once per process."""

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
from shared.storage.client.blobs import AzureBlobStore
from shared.storage.client.connections import Connections
from shared.storage.client.message_queue import MessageQueue
from shared.storage.client.queue_endpoint import QueueEndpoint
from shared.storage.client.table import Table
from shared.storage.client.table_endpoint import TableEndpoint

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
    return RequestsTransport(session=session, session_owner=False)


def _proxied() -> bool:
    """Whether a proxy is configured (NO_PROXY alone configures none)."""
    return any(scheme != "no" for scheme in urllib.request.getproxies())


def resolve_connection(connection: str) -> str:
    return AZURITE_CONNECTION if connection.strip() == DEVELOPMENT_STORAGE else connection


class StorageAccount:
    """Tables, queues and blob containers by logical name; `prefix` keeps test runs apart
    in one account (a container's name comes from an app setting, like a queue's)."""

    def __init__(self, connection: str, prefix: str = "") -> None:
        self.connection = resolve_connection(connection)
        self.prefix = prefix
        self._tables: dict[str, Table] = {}
        self._queues: dict[str, MessageQueue] = {}
        self._containers: dict[str, AzureBlobStore] = {}
        self._lock = threading.Lock()
        self._transport = shared_transport()
        self._table_endpoint = TableEndpoint.parse(self.connection)
        self._table_connections = Connections(self._table_endpoint.scheme, self._table_endpoint.host,
                                              self._table_endpoint.port, POOL_SIZE)
        self._queue_endpoint = QueueEndpoint.parse(self.connection)
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
                store = self._containers[container] = AzureBlobStore(self.connection, container, self._transport,
                                                                     OPERATIONS)
            return store
