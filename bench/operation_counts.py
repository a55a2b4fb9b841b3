"""Storage operations per task lifecycle, counted exactly in this process.

The services are built here (`Queue.build`) on tables and queues of their own, and every
request they send passes the process-wide `OPERATIONS` counter. The steps run one after
another from one thread, so each step's delta is its own cost with no contention: the
floor that the HTTP run, with concurrent workers, can only exceed.

Besides the total per step, each request is labelled (method and table or queue) so a
surprising count can be explained from the output alone.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from azure.storage.queue import QueueClient

from shared.config import Settings
from shared.domain.ids import new_slugid
from shared.services.queue import Queue
from shared.storage.account import OPERATIONS

from .tasks import task_definition

CLAIM_BATCH = 4          # as many tasks per claimWork as the HTTP run asks for
REPAIR_DELAY = 1         # seconds; the smallest the settings allow, so the sweep finds intents soon
EVENT_HOLD = timedelta(seconds=30)


@dataclass
class Step:
    name: str
    operations: int = 0
    calls: int = 0
    seconds: float = 0.0
    kinds: Counter = field(default_factory=Counter)


class Labeller:
    """Records a label per request while a step is open.

    `OPERATIONS` is the only place every request passes and it offers no listener, so its
    `on_request` is shadowed on the instance, before the services are built (the queue
    clients bind the hook at construction). The count itself is still the counter's.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.current: Step | None = None
        self._original = OPERATIONS.on_request

    def __enter__(self) -> Labeller:
        OPERATIONS.on_request = self._on_request
        return self

    def __exit__(self, *exc) -> None:
        del OPERATIONS.on_request  # the class's method is visible again

    def _on_request(self, request) -> None:
        self._original(request)
        step = self.current
        if step is not None:
            http = getattr(request, "http_request", request)
            step.kinds[_label(http.method, http.url, self.prefix)] += 1


def _label(method: str, url: str, prefix: str) -> str:
    """'GET Tasks(entity)', 'POST $batch', 'POST queue:repairs/messages' and the like."""
    path = url.split("?", 1)[0].split("/", 4)[-1]  # after http://host:port/<account>/
    if path.startswith(prefix):
        path = path[len(prefix):].lstrip("-")
    if "/" in path:
        queue, rest = path.split("/", 1)
        return f"{method} queue:{queue}/{'messages' if rest == 'messages' else 'message'}"
    name = re.sub(r"\(.+\)$", "(entity)", path)
    return f"{method} {name.replace('()', '(query)')}"


def settings_for(connection: str) -> Settings:
    """Settings for services of this process, on tables and queues of their own (the table
    prefix); claimWork answers at once instead of long-polling."""
    prefix = "b" + uuid.uuid4().hex[:10]
    return Settings(
        storage_connection=connection, table_prefix=prefix, claim_timeout=1200, claim_work_wait=0,
        credentials_client_id="queue", credentials_access_token="bench-only",
        resolved_queue=f"{prefix}-resolved", repair_queue=f"{prefix}-repairs", repair_delay=REPAIR_DELAY)


def count(connection: str, lifecycles: int, progress) -> dict:
    settings = settings_for(connection)
    prefix = settings.table_prefix
    with Labeller(prefix) as labeller:
        services = Queue.build(settings)
        # One group for all tasks, like the tasks of one decision task.
        definition = task_definition(f"bench-{prefix}/inprocess", task_group_id=new_slugid())
        # One lifecycle first: the task group row and queue row then exist, as they do in
        # steady state, and nothing first-time is counted.
        _run(services, labeller, definition, 1, settings, [Step(n) for n in _STEP_NAMES])
        progress(f"counting storage operations over {lifecycles} lifecycles in-process")
        steps = [Step(name) for name in _STEP_NAMES]
        _run(services, labeller, definition, lifecycles, settings, steps)
    return _summary(steps, lifecycles)


_STEP_NAMES = ("createTask", "claimWork", "reportCompleted", "task-resolved event", "repair sweep")


def _run(services: Queue, labeller: Labeller, definition: dict, n: int, settings: Settings,
         steps: list[Step]) -> None:
    create, claim, complete, events, repairs = steps
    queue_id = definition["taskQueueId"]
    with counted_step(labeller, create):
        for _ in range(n):
            services.tasks.create(new_slugid(), definition)
            create.calls += 1
    with counted_step(labeller, claim):
        claimed = _claim_all(services, queue_id, n, claim)
    with counted_step(labeller, complete):
        for task_id, run_id in claimed:
            services.resolutions.completed(task_id, run_id)
            complete.calls += 1
    with counted_step(labeller, events):
        events.calls = deliver_events(services)
    expect(events.calls == n, f"{events.calls} 'task resolved' events for {n} resolutions")
    time.sleep(REPAIR_DELAY + 1.1)  # intents become visible whole seconds after they were sent
    with counted_step(labeller, repairs):
        repaired = services.repairs.sweep()
    left = messages_left(settings.storage_connection, settings.repair_queue)
    expect(left == 0, f"{left} repair intents still queued after the sweep")
    expect(repaired == 0, f"the sweep repaired {repaired} resolutions that were already handled")
    repairs.calls = n


@contextmanager
def counted_step(labeller: Labeller, step: Step):
    before = OPERATIONS.value
    started = time.perf_counter()
    labeller.current = step
    try:
        yield step
    finally:
        labeller.current = None
        step.seconds += time.perf_counter() - started
        step.operations += OPERATIONS.value - before


def _claim_all(services: Queue, queue_id: str, n: int, step: Step) -> list[tuple[str, int]]:
    claimed: list[tuple[str, int]] = []
    while len(claimed) < n:
        answer = services.claims.claim_work(queue_id, "bench", "counter", min(CLAIM_BATCH, n - len(claimed)))
        step.calls += 1
        expect(answer["tasks"], f"claimWork found nothing with {n - len(claimed)} tasks pending")
        claimed += [(task["status"]["taskId"], task["runId"]) for task in answer["tasks"]]
    return claimed


def deliver_events(services: Queue) -> int:
    """Each queued 'task resolved' event to the handler, received and deleted as the host's
    queue trigger does, so the receive and delete requests are counted too."""
    events = services.tasks.updater.events.resolved
    delivered = 0
    while messages := events.receive(32, EVENT_HOLD):
        for message in messages:
            services.resolution_handler.handle(message.body["taskId"], message.body["runId"])
            events.delete(message)
            delivered += 1
    return delivered


def messages_left(connection: str, queue_name: str) -> int:
    # A client of our own, outside the counter: checking must not add to the figures.
    client = QueueClient.from_connection_string(connection, queue_name)
    return client.get_queue_properties().approximate_message_count


def expect(condition, message: str) -> None:
    if not condition:
        raise RuntimeError(f"operation count is not trustworthy: {message}")


def _summary(steps: list[Step], lifecycles: int) -> dict:
    out = {"lifecycles": lifecycles, "claim_batch": CLAIM_BATCH, "steps": {}}
    for step in steps:
        out["steps"][step.name] = {
            "operations": step.operations,
            "per_lifecycle": round(step.operations / lifecycles, 2),
            "calls": step.calls,
            "by_kind_per_lifecycle": {kind: round(number / lifecycles, 2)
                                      for kind, number in step.kinds.most_common()},
        }
    api = sum(step.operations for step in steps[:3])
    background = sum(step.operations for step in steps[3:])
    out["api_per_lifecycle"] = round(api / lifecycles, 2)
    out["background_per_lifecycle"] = round(background / lifecycles, 2)
    out["total_per_lifecycle"] = round((api + background) / lifecycles, 2)
    return out
