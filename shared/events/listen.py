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

from shared.domain.exchanges import full_name
from shared.events.amqp_subscription import AmqpSubscription

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
    exchange = full_name(exchange)
    subscription = AmqpSubscription.create(url or os.environ.get("EVENTS_AMQP_URL") or LOCAL_BROKER,
                                           [(exchange, pattern) for pattern in patterns], exclusive=True)
    print(json.dumps({"listening": exchange, "patterns": patterns}), file=out, flush=True)
    seen = 0
    try:
        for delivery in subscription.stream():
            print(json.dumps(delivery.as_json()), file=out, flush=True)
            seen += 1
            if count and seen >= count:
                break
    except KeyboardInterrupt:
        pass
    finally:
        subscription.close()
    return 0
