"""Events on an AMQP 0-9-1 broker (RabbitMQ, and so Taskcluster's Pulse), as Taskcluster's
queue publishes them: durable topic exchanges `exchange/taskcluster-queue/v1/<name>`,
persistent `application/json` messages under the primary routing key, the task's routes
in the `CC` header as `route.<r>` (the broker delivers a copy to queues bound on those).

A few connections per process (LANES; `amqp_connection`), each used by one thread at a
time under its lock; `publish` returns once the broker has taken every message. One event
goes on a channel in confirm mode (a round trip for its confirm); several (a creation's
two, a fan-out's hundreds) on a transacted channel of the same connection, published and
then committed (one round trip for all: with a durable queue bound, 0.7-0.9 ms for five
messages, against 1.1-1.2 ms for five confirms sent at once and 3.9 ms one after another).
A publish waits for the broker, so one connection
shared by all of a busy host's threads was a queue of its own: sampled during a
10,000-task graph, a tenth of the host's threads were waiting for its lock. A publish
takes a free connection, or waits for one. A task's changes follow each other, each
published before the call that made it answers, so its events keep their order.

The bus connects when it is made (the process's start), and each connection declares every
exchange of every service (`domain.exchanges`), as Taskcluster's services declare theirs on
start, so consumers may bind before the first event.
A broker that is down costs a caller one refused connection, not a wait: after a
failure, a connection's attempts are spaced out (RECONNECT_AFTER) and fail at once meanwhile.
The connection has no heartbeats (a host may publish nothing for hours, and could answer
them only while it publishes): a connection that died meanwhile is found at the next
publish, which then reconnects and publishes once more at once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Sequence

from pamqp import commands

from shared.domain.exchanges import ALL_EXCHANGES
from shared.domain.task_events import Event
from shared.events.amqp_connection import AmqpConnection, AmqpConnectionError, BrokerAddress
from shared.events.bus import BusUnavailable

log = logging.getLogger("queue.events")
RECONNECT_AFTER = 1.0   # seconds between connection attempts while the broker is down
CONNECT_TIMEOUT = 3.0
REPLY_TIMEOUT = 30.0    # seconds a publish waits for the broker (as long as a resource alarm may block it)


LANES = 4   # connections a process publishes on at once


class AmqpBus:
    def __init__(self, url: str) -> None:
        self._lanes = [_Lane(url) for _ in range(LANES)]
        self._next = 0
        self.connect()

    def connect(self) -> bool:
        """Connect a first lane now, declaring the exchanges (the process is starting); False,
        and logged, if the broker is unreachable: every later connection declares them too."""
        lane = self._lanes[0]
        with lane.lock:
            try:
                lane.connect()
            except BusUnavailable as error:
                log.warning("exchanges not declared at start: %s", error)
                return False
        return True

    def publish(self, events: Sequence[Event]) -> None:
        for lane in self._lanes:
            if lane.lock.acquire(blocking=False):
                break
        else:   # all busy: wait for one, taking turns
            self._next = (self._next + 1) % len(self._lanes)
            lane = self._lanes[self._next]
            lane.lock.acquire()
        try:
            lane.publish(events)
        finally:
            lane.lock.release()

    def close(self) -> None:
        for lane in self._lanes:
            with lane.lock:
                lane.close()


class _Lane:
    """One connection, with a channel in confirm mode and a transacted one; its caller holds `lock`."""

    def __init__(self, url: str) -> None:
        self._address = BrokerAddress.from_url(url)
        self.lock = threading.Lock()
        self._connection: AmqpConnection | None = None
        self._next_attempt = 0.0

    def publish(self, events: Sequence[Event]) -> None:
        reused = self._connection is not None
        try:
            self._publish(self._open(), events)
        except BusUnavailable:
            if not reused:
                raise
            self._publish(self._open(again=True), events)   # the connection had died idle

    def _publish(self, connection: AmqpConnection, events: Sequence[Event]) -> None:
        messages = [(event.exchange_name, event.routing_key, _encode(event), _properties(event)) for event in events]
        try:
            if len(messages) == 1:
                connection.publish_confirmed(*messages[0])
            else:
                connection.publish_committed(messages)
        except AmqpConnectionError as error:
            self._drop(error)
            raise BusUnavailable(f"the broker did not take the events: {error}") from error

    def connect(self) -> None:
        self._open(again=True)

    def _open(self, again: bool = False) -> AmqpConnection:
        if self._connection is not None and self._connection.is_open:
            return self._connection
        if time.monotonic() < self._next_attempt and not again:
            raise BusUnavailable("the broker was unreachable a moment ago")
        try:
            self._connection = AmqpConnection(self._address, list(ALL_EXCHANGES), CONNECT_TIMEOUT, REPLY_TIMEOUT)
        except AmqpConnectionError as error:
            self._drop(error)
            raise BusUnavailable(f"cannot reach the broker: {error}") from error
        log.info("connected to the event broker %s:%s", self._address.host, self._address.port)
        return self._connection

    def _drop(self, error: Exception) -> None:
        log.warning("event broker connection lost: %s", error)
        self._next_attempt = time.monotonic() + RECONNECT_AFTER
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = None


def _encode(event: Event) -> bytes:
    return json.dumps(event.body, separators=(",", ":")).encode()


def _properties(event: Event) -> commands.Basic.Properties:
    headers = {"CC": event.cc} if event.routes else None
    return commands.Basic.Properties(content_type="application/json", delivery_mode=2, message_id=event.id,
                                     headers=headers)
