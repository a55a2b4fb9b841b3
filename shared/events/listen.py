"""`python -m shared.events listen <exchange> [<pattern>...]`: print each event as a JSON line.

The exchange is a short name (`task-completed`) or a full one
(`exchange/taskcluster-queue/v1/task-completed`); patterns are AMQP binding patterns
(`*` one word, `#` zero or more; default `#`). The broker is EVENTS_AMQP_URL (what
`make run` prints). The queue is the listener's own: exclusive, gone when it stops.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import pika

from ..domain.task_events import EXCHANGE_PREFIX
from .amqp import connection_parameters, declare_exchanges

LOCAL_BROKER = "amqp://guest:guest@127.0.0.1:5672/%2F"


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m shared.events", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    listen = commands.add_parser("listen", help="print events as JSON lines")
    listen.add_argument("exchange")
    listen.add_argument("patterns", nargs="*", default=["#"])
    listen.add_argument("--count", type=int, default=0, help="stop after this many events (0: never)")
    return parser.parse_args(argv)


def listen(exchange: str, patterns: list[str], count: int = 0, url: str | None = None, out=sys.stdout) -> int:
    exchange = exchange if exchange.startswith("exchange/") else EXCHANGE_PREFIX + exchange
    connection = pika.BlockingConnection(connection_parameters(url or os.environ.get("EVENTS_AMQP_URL") or LOCAL_BROKER))
    channel = connection.channel()
    declare_exchanges(channel)
    queue = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
    for pattern in patterns:
        channel.queue_bind(queue, exchange, routing_key=pattern)
    print(json.dumps({"listening": exchange, "patterns": patterns}), file=out, flush=True)
    seen = 0
    try:
        for method, properties, body in channel.consume(queue, auto_ack=True):
            print(json.dumps({"exchange": method.exchange, "routingKey": method.routing_key,
                              "messageId": properties.message_id, "cc": (properties.headers or {}).get("CC", []),
                              "payload": json.loads(body)}), file=out, flush=True)
            seen += 1
            if count and seen >= count:
                break
    except KeyboardInterrupt:
        pass
    finally:
        connection.close()
    return 0
