"""Every exchange each service has, as Taskcluster names them: declared when a process's bus
connects, before anything is published, so a consumer may bind first (Taskcluster's services
declare theirs when they start; a bind to an exchange that does not exist yet fails with
`404 NOT_FOUND - no exchange` and closes the consumer's channel).

Each service's exchanges are `exchange/taskcluster-<service>/v1/<name>`; the short names are
distinct across services, so a short name alone says which service's exchange it is. The
lists are those of Taskcluster's references (queue-exchanges.json, hooks-exchanges.json,
worker-manager-exchanges.json); an exchange is listed here before anything publishes on it.

The queue has one exchange of ours beside Taskcluster's, after them: `task-group-stalled`,
where the watchdog reports a group that stopped moving (see `domain.group_watch` and
docs/watchdog.md). No Taskcluster exchange has that name.
"""

from __future__ import annotations

QUEUE_PREFIX = "exchange/taskcluster-queue/v1/"

OUR_QUEUE_EXCHANGES = ("task-group-stalled",)
SERVICE_EXCHANGES: dict[str, tuple[str, ...]] = {
    "queue": ("task-defined", "task-pending", "task-running", "artifact-created", "task-completed",
              "task-failed", "task-exception", "task-group-resolved", "task-group-sealed",
              "task-priority-changed", "task-group-priority-changed", *OUR_QUEUE_EXCHANGES),
    "hooks": ("hook-created", "hook-updated", "hook-deleted"),
    "worker-manager": ("worker-pool-created", "worker-pool-updated", "worker-pool-error", "worker-requested",
                       "worker-running", "worker-stopped", "worker-removed", "launch-config-created",
                       "launch-config-updated", "launch-config-archived"),
}


def prefix_of(service: str) -> str:
    return f"exchange/taskcluster-{service}/v1/"


_SERVICE_OF = {name: service for service, names in SERVICE_EXCHANGES.items() for name in names}
ALL_EXCHANGES: tuple[str, ...] = tuple(prefix_of(service) + name for service, names in SERVICE_EXCHANGES.items()
                                       for name in names)


def full_name(exchange: str) -> str:
    """`task-pending` -> `exchange/taskcluster-queue/v1/task-pending`; a full name is kept, and
    a short name of no known service is taken as the queue's (its events came first)."""
    if exchange.startswith("exchange/"):
        return exchange
    return prefix_of(_SERVICE_OF.get(exchange, "queue")) + exchange


def short_name(exchange: str) -> str:
    """The last part of an exchange's full name (a short name is kept)."""
    return exchange.rsplit("/", 1)[-1] if exchange.startswith("exchange/") else exchange
