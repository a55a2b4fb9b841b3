"""`python -m devhost.throttling --scale S [--connection <Azurite's connection string>]`:
the throttling proxy in front of an Azurite, until SIGTERM or Ctrl-C. Its first line on
stdout is JSON: the ports it listens on and the connection string that goes through it."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from devhost.throttling.proxy import ThrottlingProxy, upstream_ports
from devhost.throttling.targets import Throttle


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devhost.throttling", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, required=True,
                        help="divide Azure's targets by this (100: 20 entities/s per table partition)")
    parser.add_argument("--connection", default=os.environ.get("AzureWebJobsStorage", ""),
                        help="the Azurite to front (default: AzureWebJobsStorage)")
    parser.add_argument("--timeouts", type=float, default=0.05,
                        help="share of writes near a limit answered 500 OperationTimedOut after landing")
    parser.add_argument("--no-transaction-timeouts", dest="transaction_timeouts", action="store_false",
                        help="never time out an entity group transaction after it landed")
    parser.add_argument("--seed", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        upstream = upstream_ports(args.connection)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with ThrottlingProxy(upstream, Throttle(args.scale, args.timeouts, args.seed,
                                                  transaction_timeouts=args.transaction_timeouts)) as proxy:
        print(json.dumps({"ports": proxy.ports, "connection_string": proxy.connection_string(args.connection)}),
              flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
