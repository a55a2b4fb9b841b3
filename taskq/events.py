"""The Queue's events on AMQP (RabbitMQ, or Pulse): Taskcluster's exchanges and routing keys.

Exchange names and routing-key patterns come from the official client (`QueueEvents`), so a
subscription here is one that Taskcluster's own queue would serve as well. Used by
`taskq listen` and by the worker, which listens for the cancellation of its runs.

The server's side has its own (`shared/events/amqp_subscription.py`, for the browser's
feeds, `python -m shared.events listen` and the tests): this package installs from
`pyproject.toml` without `shared`, and the Function App's package leaves this one out
(`.funcignore`), so neither can import the other. Keep this one small: a client's queue.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pika
import taskcluster

from taskq.failures import CommandError

TASK_EXCHANGES = ("task-defined", "task-pending", "task-running", "artifact-created", "task-completed",
                  "task-failed", "task-exception")
GROUP_EXCHANGES = ("task-group-resolved", "task-group-sealed")


@dataclass(frozen=True)
class Event:
    exchange: str      # the short name, e.g. task-completed
    routing_key: str
    payload: dict

    def as_json(self) -> dict:
        return {"exchange": self.exchange, "routingKey": self.routing_key, "payload": self.payload}


def chosen_exchanges(asked: list[str] | None, task_filters: dict[str, str | None]) -> list[str]:
    """The exchanges to bind: those asked for, or all. A task's or a worker's filter (`task_filters`:
    option -> value) leaves the group exchanges out: their routing keys name only the group,
    so such a filter cannot apply to them, and binding them would bring every group's events."""
    for name in asked or []:
        if name not in TASK_EXCHANGES + GROUP_EXCHANGES:
            raise CommandError(f"no exchange {name!r}: the Queue's are {', '.join(TASK_EXCHANGES + GROUP_EXCHANGES)}")
    filters = [option for option, value in task_filters.items() if value]
    if not filters:
        return list(asked or TASK_EXCHANGES + GROUP_EXCHANGES)
    named_groups = [name for name in asked or [] if name in GROUP_EXCHANGES]
    if named_groups:
        raise CommandError(f"{filters[0]} cannot filter {', '.join(named_groups)}: those events name only a task "
                           "group (filter them with --group)")
    return [name for name in asked or TASK_EXCHANGES if name not in GROUP_EXCHANGES]


def _method_name(exchange: str) -> str:
    first, *rest = exchange.split("-")
    return first + "".join(word.capitalize() for word in rest)


def bindings(exchanges, **routing: str) -> list[tuple[str, str]]:
    """(exchange, routing-key pattern) for each named exchange, filtered on the routing-key
    fields given (taskId, taskGroupId, workerGroup, workerId, ...)."""
    queue_events = taskcluster.QueueEvents({"rootUrl": "https://unused.example.com"})
    chosen = []
    for exchange in exchanges:
        topic = getattr(queue_events, _method_name(exchange))
        fields = {key: value for key, value in routing.items() if value is not None}
        if exchange in GROUP_EXCHANGES:
            fields = {key: value for key, value in fields.items() if key in ("taskGroupId", "schedulerId")}
        binding = topic(fields)
        chosen.append((binding["exchange"], binding["routingKeyPattern"]))
    return chosen


class Subscription:
    """A private, self-deleting AMQP queue bound to the chosen exchanges. One thread only:
    pika's connections are not to be shared between threads."""

    def __init__(self, url: str, chosen: list[tuple[str, str]]) -> None:
        self._connection = pika.BlockingConnection(pika.URLParameters(url))
        self._channel = self._connection.channel()
        self._queue = self._channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
        for exchange, pattern in chosen:
            # Declared as the Queue declares them, so binding works before the first event.
            self._channel.exchange_declare(exchange, exchange_type="topic", durable=True)
            self._channel.queue_bind(self._queue, exchange, routing_key=pattern)

    def events(self, stop: threading.Event | None = None, poll: float = 0.5) -> Iterator[Event]:
        for method, _properties, body in self._channel.consume(self._queue, auto_ack=True, inactivity_timeout=poll):
            if stop is not None and stop.is_set():
                return
            if method is None:
                continue
            yield Event(method.exchange.rsplit("/", 1)[-1], method.routing_key, json.loads(body))

    def close(self) -> None:
        if self._connection.is_open:
            self._connection.close()
