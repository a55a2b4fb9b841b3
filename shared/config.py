"""App settings, read from the environment.

Azure Functions puts app settings into the environment; the local host does the same with
`local.settings.json` first, so this module only ever reads `os.environ`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field

DEVELOPMENT_STORAGE = "UseDevelopmentStorage=true"
STORAGE = "AzureWebJobsStorage"   # the storage connection's setting, as the Functions host names it
# The sample's QUEUE_CREDENTIALS_ACCESS_TOKEN: public, so never trusted (see `_credentials_token`).
DEFAULT_CREDENTIALS_TOKEN = "local-development-only"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


@dataclass(frozen=True)
class Settings:
    storage_connection: str
    table_prefix: str          # lets tests and benchmarks share one storage account
    claim_timeout: int         # seconds a claim lasts before it must be reclaimed
    claim_work_wait: int       # seconds claimWork long-polls before answering empty
    credentials_client_id: str
    credentials_access_token: str
    resolved_queue: str = "task-resolved"   # storage queue of 'task resolved' events
    repair_queue: str = "queue-repairs"     # storage queue of delayed repair intents
    repair_delay: int = 60                  # seconds before a repair intent comes due
    graph_queue: str = "task-graph-parts"   # storage queue of parts of new task graphs to create
    events_amqp_url: str = ""               # AMQP broker for events (RabbitMQ, Pulse); secret
    service_bus_connection: str = ""        # or Azure Service Bus by connection string (secret)
    service_bus_namespace: str = ""         # or by namespace, with the app's managed identity
    artifacts_container: str = "artifacts"   # blob container of artifacts' bytes
    static_clients: str = ""     # STATIC_CLIENTS: JSON [{clientId, accessToken, scopes}], Taskcluster's format
    roles: str = ""              # QUEUE_ROLES: JSON [{roleId, scopes}]
    anonymous_scopes: str = ""   # QUEUE_ANONYMOUS_SCOPES: JSON [scope]; empty: Taskcluster's public reading
    public_url: str = ""         # QUEUE_PUBLIC_URL: the origin clients call (https://host[:port]), see api/access.py
    # AzureWebJobsStorage__<property>: the account reached with the app's identity, when
    # AzureWebJobsStorage holds no connection string (see storage/client/identity.py)
    storage_identity: dict = field(default_factory=dict)
    watchdog_stall: int = 600    # QUEUE_WATCHDOG_STALL_SECONDS: how long a group's tasks may all stay as they are
    # SECRETS_ENCRYPTION_KEYS: the secrets' keys, `<keyId>:<base64>` newest first (a Key Vault
    # reference in Azure; see services/secrets/encryption.py). Never in a repr.
    secrets_encryption_keys: str = field(default="", repr=False)
    hooks_clock_file: str = ""   # HOOKS_CLOCK_FILE: tests and drills only, see runtime/clock.py
    worker_manager_queue: str = "worker-manager-wake-ups"   # storage queue waking the provisioner of a pool
    worker_manager_root_url: str = ""   # where started workers reach the app (default: public_url)

    @classmethod
    def from_environ(cls) -> Settings:
        identity = {key[len(STORAGE) + 2:]: value for key, value in os.environ.items()
                    if key.lower().startswith(STORAGE.lower() + "__") and value}
        return cls(
            storage_connection=os.environ.get(STORAGE) or ("" if identity else DEVELOPMENT_STORAGE),
            storage_identity=identity,
            table_prefix=os.environ.get("QUEUE_TABLE_PREFIX", ""),
            claim_timeout=_int("TASK_CLAIM_TIMEOUT", 1200),
            claim_work_wait=_int("CLAIM_WORK_WAIT_SECONDS", 20),
            credentials_client_id=os.environ.get("QUEUE_CREDENTIALS_CLIENT_ID", "queue"),
            credentials_access_token=_credentials_token(),
            resolved_queue=os.environ.get("QUEUE_RESOLVED_QUEUE", "task-resolved"),
            repair_queue=os.environ.get("QUEUE_REPAIR_QUEUE", "queue-repairs"),
            repair_delay=_int("QUEUE_REPAIR_DELAY_SECONDS", 60),
            graph_queue=os.environ.get("QUEUE_GRAPH_QUEUE", "task-graph-parts"),
            events_amqp_url=os.environ.get("EVENTS_AMQP_URL", ""),
            service_bus_connection=os.environ.get("EVENTS_SERVICE_BUS_CONNECTION", ""),
            service_bus_namespace=os.environ.get("EVENTS_SERVICE_BUS_NAMESPACE", ""),
            artifacts_container=os.environ.get("QUEUE_ARTIFACTS_CONTAINER", "artifacts"),
            static_clients=os.environ.get("STATIC_CLIENTS", ""),
            roles=os.environ.get("QUEUE_ROLES", ""),
            anonymous_scopes=os.environ.get("QUEUE_ANONYMOUS_SCOPES", ""),
            public_url=os.environ.get("QUEUE_PUBLIC_URL", "").strip(),
            watchdog_stall=max(_int("QUEUE_WATCHDOG_STALL_SECONDS", 600), 1),
            secrets_encryption_keys=os.environ.get("SECRETS_ENCRYPTION_KEYS", ""),
            hooks_clock_file=os.environ.get("HOOKS_CLOCK_FILE", "").strip(),
            worker_manager_queue=os.environ.get("WORKER_MANAGER_QUEUE", "worker-manager-wake-ups"),
            worker_manager_root_url=os.environ.get("WORKER_MANAGER_ROOT_URL", "").strip(),
        )


def _credentials_token() -> str:
    """The access token that signs the credentials claims hand out; the verifier trusts its
    client (QUEUE_CREDENTIALS_CLIENT_ID) with `*`, as Taskcluster trusts its queue's. Its
    STATIC_CLIENTS entry's token if it has one; else QUEUE_CREDENTIALS_ACCESS_TOKEN; else (unset
    or the sample's) one derived from STATIC_CLIENTS, a secret every instance of the deployment
    shares already. Without STATIC_CLIENTS, the sample's, which is never trusted."""
    client_id = os.environ.get("QUEUE_CREDENTIALS_CLIENT_ID", "queue")
    configured = os.environ.get("QUEUE_CREDENTIALS_ACCESS_TOKEN", "") or DEFAULT_CREDENTIALS_TOKEN
    static = os.environ.get("STATIC_CLIENTS", "")
    try:
        listed = [entry.get("accessToken") for entry in json.loads(static)
                  if isinstance(entry, dict) and entry.get("clientId") == client_id]
    except (ValueError, TypeError, AttributeError):
        listed = []   # refused with its reason when the verifier reads it
    if listed and isinstance(listed[0], str):
        return listed[0]
    if configured != DEFAULT_CREDENTIALS_TOKEN or not static.strip():
        return configured
    derived = hmac.new(static.encode(), f"queue-credentials/{client_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(derived).decode().rstrip("=")
