"""The real local host (`python -m devhost`) for a benchmark: started on one Azurite, warmed
up, stopped; and whether its background queues drained after the measured work.

The settings make the host's background work fall inside a measured window, as it does in
a steady state: the 'task resolved' queue trigger runs as events arrive and the repair
sweep runs every second with a 2 s repair delay.
"""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import taskcluster
from azure.storage.queue import QueueClient

from devhost.azurite import Azurite
from tests.conftest import Server, start_server

from bench.tasks import task_definition

SETTINGS = {
    "CLAIM_WORK_WAIT_SECONDS": "2",      # idle workers notice the end of the run within 2 s
    "QUEUE_REPAIR_DELAY_SECONDS": "2",
    "QUEUE_REPAIR_SCHEDULE": "*/1 * * * * *",
}
SETTLE_TIMEOUT = 60.0


@contextmanager
def running(azurite: Azurite, log_dir: Path, progress, settings: dict[str, str] = SETTINGS):
    """The host, up and warmed up, for the duration of the block."""
    progress("starting the local Functions host (python -m devhost)")
    server = start_server(azurite, log_dir, **settings)
    try:
        warm_up(server)
        progress(f"host up at {server.root_url}; log {server.log_path}")
        yield server
    finally:
        server.stop()


def warm_up(server: Server) -> None:
    """One lifecycle on a queue and group of its own, so first-request costs (imports,
    storage clients, connections) stay out of the figures."""
    client = server.client()
    definition = task_definition(f"bench-{uuid.uuid4().hex[:8]}/warmup", taskcluster.slugId())
    task_id = definition["taskGroupId"]
    client.createTask(task_id, definition)
    claim = client.claimWork(definition["taskQueueId"], {"workerGroup": "bench", "workerId": "warmup", "tasks": 1})
    client.reportCompleted(task_id, str(claim["tasks"][0]["runId"]))


def settle(server: Server, finished: float, timeout: float = SETTLE_TIMEOUT) -> tuple[float, dict | None]:
    """Seconds from `finished` (a perf_counter time) until the host's event and repair queues
    are empty: whether its background work keeps up with the API (a growing backlog would
    show here). The messages left, by queue, if they did not drain in time (a figure, not a
    failure)."""
    connection = server.env["AzureWebJobsStorage"]
    queues = {name: QueueClient.from_connection_string(connection, server.env[setting])
              for name, setting in (("task-resolved", "QUEUE_RESOLVED_QUEUE"), ("repairs", "QUEUE_REPAIR_QUEUE"))}
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        left = {name: queue.get_queue_properties().approximate_message_count for name, queue in queues.items()}
        if not any(left.values()):
            return time.perf_counter() - finished, None
        time.sleep(0.2)
    return time.perf_counter() - finished, left
