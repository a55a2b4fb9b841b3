"""`python -m devhost`: the Function App on http://127.0.0.1:7071, with Azurite and a
RabbitMQ broker for its events if needed."""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import sys
from pathlib import Path

from devhost import blob_cors
from devhost import event_broker
from devhost import root_client
from devhost import secrets_keys
from devhost.azurite import Azurite
from devhost.settings import MissingSetting, load_settings
from shared.storage.client.identity import identity_settings

DEVELOPMENT_STORAGE = "UseDevelopmentStorage=true"
THROTTLE_SETTING = "STORAGE_THROTTLE"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devhost", description=__doc__)
    parser.add_argument("--app-dir", default=".", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default=7071, type=int)
    parser.add_argument("--azurite", choices=("auto", "none"), default="auto",
                        help="auto: start Azurite when AzureWebJobsStorage is unset or development storage "
                             "(and no AzureWebJobsStorage__accountName or __*ServiceUri names an account)")
    parser.add_argument("--azurite-data", default=".azurite", type=Path)
    parser.add_argument("--broker", choices=("auto", "none"), default="auto",
                        help="auto: start RabbitMQ for events unless EVENTS_AMQP_URL or "
                             "EVENTS_SERVICE_BUS_NAMESPACE/_CONNECTION names a broker")
    parser.add_argument("--broker-data", default=".rabbitmq", type=Path)
    parser.add_argument("--services-only", action="store_true",
                        help="start Azurite and RabbitMQ but not the app: for `func start` (docs/functions-core-tools.md)")
    parser.add_argument("--throttle", type=float, default=float(os.environ.get(THROTTLE_SETTING) or 0) or None,
                        metavar="SCALE", help="put Azure's throttling, its targets divided by SCALE, between the app "
                                              f"and Azurite (docs/throttling.md; default: {THROTTLE_SETTING})")
    return parser.parse_args()


def _logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    for noisy in ("azure", "urllib3", "pika"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main() -> int:
    args = _arguments()
    _logging()
    # The handlers only put the signal on a SimpleQueue: a handler runs in the main thread
    # between two of its instructions, and one that took a lock the interrupted code held (an
    # Event's, say) would deadlock. SIGHUP too: closing the terminal of a `make run` must stop
    # Azurite as Ctrl-C does.
    stopping: queue.SimpleQueue[int] = queue.SimpleQueue()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: stopping.put(number))
    azurite = None
    storage = load_settings(args.app_dir).get("AzureWebJobsStorage", "")
    signed_in = {"accountname", "blobserviceuri", "queueserviceuri", "tableserviceuri"} & set(
        identity_settings(load_settings(args.app_dir)))   # an account reached with an identity
    if args.azurite == "auto" and storage in ("", DEVELOPMENT_STORAGE) and not signed_in:
        azurite = Azurite(args.app_dir / args.azurite_data, 10000, 10001, 10002)
        print("==> starting Azurite (blob 10000, queue 10001, table 10002), data in", azurite.location, flush=True)
        try:
            azurite.start()
        except RuntimeError as error:
            print(f"error: {error}.\nIs another `make run` or Azurite still running? Stop it first, or set "
                  "AzureWebJobsStorage to the connection string of the storage to use.", file=sys.stderr)
            return 1
        os.environ["AzureWebJobsStorage"] = azurite.connection_string
    broker = throttled = None
    root = root_client.ensure(load_settings(args.app_dir), args.app_dir / args.azurite_data)
    secrets_keys.ensure(load_settings(args.app_dir), args.app_dir / args.azurite_data)
    try:
        if args.throttle:
            throttled = _start_throttling(load_settings(args.app_dir).get("AzureWebJobsStorage", ""), args.throttle)
            if throttled is None:
                return 1
        if args.broker == "auto" and event_broker.wants_local_broker(load_settings(args.app_dir)):
            broker = _start_broker(args.app_dir / args.broker_data)
            if broker is None:
                return 1
        print(event_broker.describe(load_settings(args.app_dir), started_here=broker is not None), flush=True)
        if args.services_only:
            return _serve_services(load_settings(args.app_dir), root, stopping)
        from devhost.host import LocalHost
        # Where the worker manager's local workers reach this host, whatever port it serves on.
        reachable = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
        os.environ.setdefault("WORKER_MANAGER_ROOT_URL", f"http://{reachable}:{args.port}")
        try:
            host = LocalHost(args.app_dir, args.host, args.port).start()
        except OSError as error:
            print(f"error: cannot serve on {args.host}:{args.port}: {error.strerror}. "
                  "Choose another port: make run PORT=7072", file=sys.stderr)
            return 1
        except MissingSetting as error:
            print(f"error: {error.args[0]}; see local.settings.sample.json", file=sys.stderr)
            return 1
        print(f"Queue API listening on {host.base_url}/api/queue/v1/  (Ctrl-C stops)", flush=True)
        if root:
            root.keep()
            print(root.banner(host.base_url), flush=True)
        _wait_for(stopping)
        print("==> stopping", flush=True)
        host.stop()
    finally:
        if throttled:
            throttled.stop()
        if broker:
            broker.stop()
        if azurite:
            azurite.stop()
    return 0


def _serve_services(settings: dict[str, str], root, stopping: queue.SimpleQueue) -> int:
    """Azurite and the broker for an app served by Core Tools (`func start`, on port 7071): what
    its local.settings.json needs to use them is printed, then they run until a signal."""
    blob_cors.allow_browser_reads(settings.get("AzureWebJobsStorage", ""))
    clients = settings.get("STATIC_CLIENTS") or (root and json.dumps([{**root.credentials, "scopes": ["*"]}]))
    values = {"AzureWebJobsStorage": settings.get("AzureWebJobsStorage", ""), "EVENTS_AMQP_URL": settings.get("EVENTS_AMQP_URL", ""),
              "STATIC_CLIENTS": clients or "", "SECRETS_ENCRYPTION_KEYS": settings.get("SECRETS_ENCRYPTION_KEYS", "")}
    print("==> storage and events are up, without the app; for `func start` here, local.settings.json's "
          "Values need:", flush=True)
    for name, value in values.items():
        print(f"    {json.dumps(name)}: {json.dumps(value)},", flush=True)
    if root:
        root.keep()
        print(root.banner("http://127.0.0.1:7071"), flush=True)
    _wait_for(stopping)
    print("==> stopping", flush=True)
    return 0


def _wait_for(signals: queue.SimpleQueue) -> None:
    """Until a signal arrives. The wait has a timeout so that it is a timed lock acquire,
    which lets the main thread run the signal's handler while it waits."""
    while True:
        try:
            signals.get(timeout=0.5)
            return
        except queue.Empty:
            continue


def _start_broker(location: Path):
    """RabbitMQ for events on 127.0.0.1:5672 (EVENTS_AMQP_URL set to it), or None if it cannot start."""
    from devhost.rabbitmq import BrokerUnavailable, RabbitMQ
    broker = RabbitMQ(location, 5672)
    print("==> starting RabbitMQ for events (AMQP 5672), data in", broker.location, flush=True)
    try:
        broker.start()
    except (BrokerUnavailable, OSError) as error:
        print(f"error: {error}.\nIs another `make run` or broker still running? Stop it, or set EVENTS_AMQP_URL "
              "to the broker to use.", file=sys.stderr)
        return None
    os.environ["EVENTS_AMQP_URL"] = broker.url
    return broker


def _start_throttling(storage: str, scale: float):
    """The throttling proxy in front of the Azurite the app uses (AzureWebJobsStorage set to
    go through it), or None if it cannot start."""
    from devhost.throttling.process import ThrottledStorage
    from devhost.throttling.targets import rates
    from shared.storage.client.account import resolve_connection
    try:
        throttled = ThrottledStorage(resolve_connection(storage), scale).start()
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    os.environ["AzureWebJobsStorage"] = throttled.connection_string
    targets = ", ".join(f"{name} {value:g}" for name, value in rates(scale).items())
    print(f"==> storage throttled as Azure's targets / {scale:g} ({targets}); counts: "
          f"http://127.0.0.1:{throttled.ports['table']}/_throttling/counts", flush=True)
    return throttled


def _exit(code: int) -> None:
    """End the process now that the host stopped. The pollers had their grace period; a
    handler still in flight (say, retrying storage that has gone away, which takes minutes)
    would otherwise hold the interpreter's exit, since it joins every pool thread. Its
    message is not lost: unsettled, it is delivered again, as after any crash."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit(main())
