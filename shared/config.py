"""App settings, read from the environment.

Azure Functions puts app settings into the environment; the local host does the same with
`local.settings.json` first, so this module only ever reads `os.environ`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DEVELOPMENT_STORAGE = "UseDevelopmentStorage=true"


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
    public_url: str = "http://127.0.0.1:7071"   # the root URL clients reach the app at

    @classmethod
    def from_environ(cls) -> Settings:
        return cls(
            storage_connection=os.environ.get("AzureWebJobsStorage") or DEVELOPMENT_STORAGE,
            table_prefix=os.environ.get("QUEUE_TABLE_PREFIX", ""),
            claim_timeout=_int("TASK_CLAIM_TIMEOUT", 1200),
            claim_work_wait=_int("CLAIM_WORK_WAIT_SECONDS", 20),
            credentials_client_id=os.environ.get("QUEUE_CREDENTIALS_CLIENT_ID", "queue"),
            credentials_access_token=os.environ.get("QUEUE_CREDENTIALS_ACCESS_TOKEN", "local-development-only"),
            resolved_queue=os.environ.get("QUEUE_RESOLVED_QUEUE", "task-resolved"),
            repair_queue=os.environ.get("QUEUE_REPAIR_QUEUE", "queue-repairs"),
            repair_delay=_int("QUEUE_REPAIR_DELAY_SECONDS", 60),
            graph_queue=os.environ.get("QUEUE_GRAPH_QUEUE", "task-graph-parts"),
            events_amqp_url=os.environ.get("EVENTS_AMQP_URL", ""),
            service_bus_connection=os.environ.get("EVENTS_SERVICE_BUS_CONNECTION", ""),
            service_bus_namespace=os.environ.get("EVENTS_SERVICE_BUS_NAMESPACE", ""),
            artifacts_container=os.environ.get("QUEUE_ARTIFACTS_CONTAINER", "artifacts"),
            public_url=os.environ.get("QUEUE_PUBLIC_URL", "http://127.0.0.1:7071"),
        )
