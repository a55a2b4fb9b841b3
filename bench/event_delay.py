"""How soon an event is out after the change it announces, on a real RabbitMQ.

    python -m bench.event_delay [--lifecycles N] [--workers W]

The real local host (one Azurite, one RabbitMQ, both started here) runs N lifecycles
(createTask, claimWork, reportCompleted) from W concurrent clients, while one AMQP consumer
bound on every task exchange receives the events. An event's delay is the time from the
change it announces (the run's `scheduled`, `started` or `resolved`, stamped by the host
when it wrote the change) to its arrival at the consumer, on the same machine's clock:
p50, p95 and the largest, by exchange. The issue's target: p95 within 1 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import taskcluster

from devhost.azurite import Azurite
from shared.domain.timestamps import parse_iso
from tests.conftest import shared_broker
from tests.events.amqp_consumer import Consumer

from bench import local_host, throttled
from bench.report import percentiles, progress
from bench.tasks import task_definition

STAMPS = {"task-pending": "scheduled", "task-running": "started", "task-completed": "resolved"}
TARGET_P95 = 1.0


def lifecycle(server, task_queue_id: str, group_id: str, worker: int) -> None:
    queue = server.client()
    task_id = taskcluster.slugId()
    queue.createTask(task_id, task_definition(task_queue_id, group_id))
    claimed = []
    while not claimed:
        claimed = queue.claimWork(task_queue_id, {"workerGroup": "bench", "workerId": f"w{worker}",
                                                  "tasks": 1})["tasks"]
    queue.reportCompleted(claimed[0]["status"]["taskId"], str(claimed[0]["runId"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lifecycles", type=int, default=300)
    parser.add_argument("--workers", type=int, default=8)
    throttled.add_arguments(parser)
    args = parser.parse_args(argv)
    broker = shared_broker()
    progress(f"RabbitMQ up at {broker.url}")
    task_queue_id, group_id = f"bench-{uuid.uuid4().hex[:8]}/events", taskcluster.slugId()
    provisioner, worker_type = task_queue_id.split("/")
    with Azurite() as azurite, throttled.storage(azurite, args.throttle, args.heat) as (storage, proxy), \
            local_host.running(storage, Path(tempfile.mkdtemp()), progress) as server:
        if proxy:
            proxy.reset()
        consumer = Consumer(broker.url, [{"exchange": f"exchange/taskcluster-queue/v1/{name}",
                                          "routingKeyPattern": f"primary.*.*.*.*.{provisioner}.{worker_type}.#"}
                                         for name in STAMPS])
        arrivals: dict[str, float] = {}
        started = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            pending = [pool.submit(lifecycle, server, task_queue_id, group_id, index % args.workers)
                       for index in range(args.lifecycles)]
            while not all(future.done() for future in pending):
                _receive(consumer, arrivals)
                time.sleep(0.005)
            for future in pending:
                future.result()
        give_up = time.monotonic() + 30
        while len(consumer.received) < 3 * args.lifecycles and time.monotonic() < give_up:
            _receive(consumer, arrivals)
            time.sleep(0.01)
        elapsed = time.perf_counter() - started
        delays: dict[str, list[float]] = {name: [] for name in STAMPS}
        for message in consumer.received:
            run = message.body["status"]["runs"][message.body["runId"]]
            changed = parse_iso(run[STAMPS[message.name]]).timestamp()
            delays[message.name].append(max(0.0, arrivals[message.message_id] - changed))
        consumer.close()
        heat = throttled.figures(proxy, tasks=args.lifecycles) if proxy else None
    everything = sorted(delay for values in delays.values() for delay in values)
    print(f"\n{args.lifecycles} lifecycles from {args.workers} clients in {elapsed:.1f} s; "
          f"{len(everything)} of {3 * args.lifecycles} events received")
    for name, values in [*delays.items(), ("all", everything)]:
        cut = percentiles(values)
        print(f"  {name:15s} p50 {cut['p50_ms']:7.1f} ms   p95 {cut['p95_ms']:7.1f} ms   "
              f"max {cut['max_ms']:7.1f} ms   ({cut['count']} events)")
    for name, value in throttled.rows(heat):
        print(f"  {name}  {value}")
    p95 = percentiles(everything)["p95_ms"] / 1000
    print(f"p95 {p95 * 1000:.1f} ms: {'within' if p95 <= TARGET_P95 else 'OVER'} the target of {TARGET_P95:.0f} s")
    return 0


def _receive(consumer: Consumer, arrivals: dict[str, float]) -> None:
    before = len(consumer.received)
    now = datetime.now(timezone.utc).timestamp()
    for message in consumer.drain()[before:]:
        arrivals.setdefault(message.message_id, now)


if __name__ == "__main__":
    sys.exit(main())
