"""`taskq-worker` (or `python -m taskq_worker`, or `make worker QUEUE=...`)."""

from __future__ import annotations

import argparse
import logging
import os
import queue as queue_module
import re
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path

from taskq.connection import events_url, queue

from taskq_worker.live_log import LiveLogServer
from taskq_worker.managed import ManagedWorker, RegistrationFailed, take_from_environment
from taskq_worker.worker import Worker


def _default_worker_id() -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]", "-", socket.gethostname())[:28]
    return f"{name}-{os.getpid()}"


def _arguments(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="taskq-worker", description=__doc__.splitlines()[0] + (
        " Runs generic-worker payloads (command, env, maxRunTime, artifacts) from one task queue."),
        epilog="The Queue and the worker's credentials come from TASKCLUSTER_ROOT_URL, TASKCLUSTER_CLIENT_ID "
               "and TASKCLUSTER_ACCESS_TOKEN (default: the local host of `make run`). With EVENTS_AMQP_URL "
               "set, cancellations are heard at once. A worker the worker manager started finds its identity "
               "and single-use registration token in TASKQ_* variables and registers with them instead.")
    queue_id = os.environ.get("TASKQ_WORKER_QUEUE") or os.environ.get("TASKQ_WORKER_POOL_ID")
    parser.add_argument("--queue", default=queue_id, required=not queue_id,
                        help="taskQueueId to claim from, e.g. proj/linux")
    parser.add_argument("--capacity", type=int, default=1, help="tasks run at once (default 1)")
    parser.add_argument("--worker-group", default=os.environ.get("TASKQ_WORKER_GROUP", "local"))
    parser.add_argument("--worker-id", default=os.environ.get("TASKQ_WORKER_ID") or _default_worker_id())
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "taskq-worker",
                        help="where each run gets its fresh folder")
    parser.add_argument("--live-log-port", type=int, default=0, help="port of the live log server (0: any free)")
    parser.add_argument("--live-log-host", default=os.environ.get("TASKQ_WORKER_LIVE_LOG_HOST", "127.0.0.1"),
                        help="host name readers reach this worker by (and the address it binds to, "
                             "unless --live-log-bind)")
    parser.add_argument("--live-log-bind", help="address the live log server binds to (e.g. 0.0.0.0)")
    parser.add_argument("--no-live-log", action="store_true", help="upload the log only once the run ends")
    return parser.parse_args(argv)


log = logging.getLogger("taskq_worker.cli")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for noisy in ("urllib3", "pika", "taskcluster"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        started = take_from_environment()   # first: no task may inherit the token
    except RegistrationFailed as failure:
        log.error("cannot register: %s", failure)
        return 1
    client = queue()
    managed = None
    if started is not None:
        managed = ManagedWorker(started[0], [client])
        try:
            managed.register(started[1])
        except RegistrationFailed as failure:
            log.error("registerWorker refused this worker: %s", failure)
            return 1
    live_logs = None if args.no_live_log else LiveLogServer(args.live_log_bind or args.live_log_host,
                                                            args.live_log_port, args.live_log_host)
    worker = Worker(client, args.queue, args.worker_group, args.worker_id, args.capacity,
                    args.work_dir / args.worker_id, live_logs, events_url(), managed)
    _shut_down_on_signals(worker)
    worker.run()
    return 0


def _shut_down_on_signals(worker: Worker) -> None:
    """SIGTERM and SIGINT shut the worker down, from a thread waiting for them.

    A signal handler runs in the main thread between two of its instructions, whatever locks
    it holds then. One that started a thread deadlocked when the signal came while the main
    thread held threading's own lock (noting a finished run's thread as stopped): the new
    thread needs that lock to start, and the handler waited for it to start. The handler
    only puts the signal on a SimpleQueue, whose put takes no lock that the interrupted
    thread could hold."""
    received: queue_module.SimpleQueue[int] = queue_module.SimpleQueue()

    def relay() -> None:
        received.get()
        worker.shutdown()
    threading.Thread(target=relay, name="shutdown", daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _frame: received.put(number))


def main_exit() -> None:
    sys.exit(main())
