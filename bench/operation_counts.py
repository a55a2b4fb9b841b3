"""Storage round trips per task lifecycle, counted exactly in this process, including each
task's share of every sweep that touches it.

The services are built here (`Services.build`, from app settings in the environment as the host
builds them) on tables and queues of their own, and every request they send passes the
process-wide `OPERATIONS` counter. The steps run one after another from one thread, so each
step's delta is its own cost with no contention: the floor that the HTTP runs, with
concurrent workers, can only exceed.

A lifecycle is what the host does for one task, through the same service calls as the
functions in `shared/functions/`: createTask; claimWork asking for 4 tasks; reportCompleted
(which handles the resolution it makes); the 'task resolved' events, if any were announced
(received and deleted as the queue trigger does, then handled);
the repair sweep once its intents are due; then every time-driven sweep, each run at a
`now` just past what it watches: claim expiry (past `takenUntil`), deadlines (past the deadline), expiration
(past `expires`: the task, its rows and its group are deleted) and the expiry of the worker
and the task queue (past their `expires`).

Each request is also labelled (method and table or queue) so a surprising count can be
explained from the output alone.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache

from azure.functions.queue import QueueMessage  # not func.QueueMessage: that one takes no dequeue_count
from azure.storage.queue import QueueClient, TextBase64DecodePolicy

from devhost.azurite import REPO
from shared.config import Settings
from shared.domain.errors import NotFound
from shared.domain.artifacts import object_name
from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, utcnow
from shared.services.tasks.run_results import RESULTS_NAME
from shared.services.wiring import Services
from shared.storage.client.account import OPERATIONS
from shared.storage.patterns.keys import blob_name
from tests.conftest import shared_broker

from bench.tasks import task_definition

CLAIM_BATCH = 4          # tasks per claimWork, as the HTTP runs ask for
REPAIR_DELAY = 1         # seconds; the smallest the settings allow, so the sweep finds intents soon
EVENT_HOLD = 300         # seconds a received message stays hidden while handled (the host's hold)
PAST_DUE = timedelta(seconds=1)   # how far past what it watches each time-driven sweep runs
BLOB_CONTAINER = "artifacts"   # after the prefix: the container of these services' blobs
TARGET = 8               # the target for round trips per lifecycle ("A lean storage core")
# A queue trigger receives this many messages at a time (host.json's queues.batchSize).
EVENT_BATCH = json.loads((REPO / "host.json").read_text())["extensions"]["queues"].get("batchSize", 16)


# A process creates each table it uses on first use: a sharded table's shards are first used
# one by one as tasks hash to them, so a warm-up cannot make them all exist.
FIRST_USE = "POST Tables"


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
        # Where the requests of the services' own threads go when no step is open (while
        # one is, the step's count already has them): storing the publication mark, the
        # deferred deletes of claim rows.
        self.background: Step | None = None
        self._original = OPERATIONS.on_request

    def __enter__(self) -> Labeller:
        OPERATIONS.on_request = self._on_request
        return self

    def __exit__(self, *exc) -> None:
        del OPERATIONS.on_request  # the class's method is visible again

    def _on_request(self, request) -> None:
        http = getattr(request, "http_request", request)
        label = _label(http.method, http.url, self.prefix, getattr(http, "table", ""))
        if label == FIRST_USE:
            return   # once per table and process, not work of the step: not counted at all
        self._original(request)
        step = self.current
        if step is None and self.background is not None and threading.current_thread() is not threading.main_thread():
            step = self.background
            step.operations += 1
        if step is not None:
            step.kinds[label] += 1


def _label(method: str, url: str, prefix: str, table: str = "") -> str:
    """'GET Tasks(entity)', 'POST $batch(TaskGroups)', 'POST queue:repairs/messages', 'PUT blob' and the like."""
    path, _, query = url.partition("?")
    path = path.split("/", 4)[-1]  # after http://host:port/<account>/
    if path == "$batch" and table:
        path = f"{table}$batch"
    if path.startswith(prefix):
        path = path[len(prefix):].lstrip("-")
    if path.split("/", 1)[0] == BLOB_CONTAINER:
        return f"{method} blob{'(batch)' if 'comp=batch' in query else ''}"
    if "/" in path:
        queue, rest = path.split("/", 1)
        return f"{method} queue:{queue}/{'messages' if rest == 'messages' else 'message'}"
    name = re.sub(r"\(.+\)$", "(entity)", path)
    name = re.sub(r"^([A-Za-z]+?)W?\d{2}(?=\(|\$|$)", r"\1", name)   # a shard of a table counts as the table
    if name.endswith("$batch"):
        return f"{method} $batch({name[:-len('$batch')]})"
    return f"{method} {name.replace('()', '(query)')}"


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


def app_settings(connection: str) -> dict[str, str]:
    """App settings of services of this process, on tables and queues of their own (the
    table prefix, and a queue of its own for every queue trigger); claimWork answers at once
    instead of long-polling."""
    prefix = "b" + uuid.uuid4().hex[:10]
    settings = {"AzureWebJobsStorage": connection, "QUEUE_TABLE_PREFIX": prefix, "TASK_CLAIM_TIMEOUT": "1200",
                "CLAIM_WORK_WAIT_SECONDS": "0", "QUEUE_CREDENTIALS_ACCESS_TOKEN": "bench-only",
                "QUEUE_REPAIR_QUEUE": f"{prefix}-repairs", "QUEUE_REPAIR_DELAY_SECONDS": str(REPAIR_DELAY),
                "QUEUE_ARTIFACTS_CONTAINER": f"{prefix}-{BLOB_CONTAINER}",
                # Events on, as `make run` has them: storing the publication mark is counted too.
                "EVENTS_AMQP_URL": shared_broker().url}
    for setting in _queue_functions():
        settings[setting] = f"{prefix}-{setting.lower().removeprefix('queue_').replace('_', '-')}"
    return settings


@cache
def _functions() -> list:
    """The Function App's functions (`get_functions()` indexes the app once per process)."""
    from function_app import app  # imports every binding: only when services are counted
    return list(app.get_functions())


def _queue_functions() -> dict[str, object]:
    """The queue-triggered functions by the app setting naming their queue."""
    return {function.get_trigger().queue_name.strip("%"): function.get_user_function()
            for function in _functions() if function.get_trigger().type == "queueTrigger"}


@dataclass
class InProcess:
    """The Queue's services built in this process, what they are counted with, and the
    host's part that is not a service: polling the queue triggers' queues."""

    settings: dict[str, str]
    services: Services
    labeller: Labeller
    queues: dict[str, QueueClient]     # app setting -> the queue its trigger polls, counted

    @property
    def prefix(self) -> str:
        return self.settings["QUEUE_TABLE_PREFIX"]

    def step(self, step: Step):
        return counted_step(self.labeller, step)

    def deliver(self) -> Counter:
        """Each message queued for a queue-triggered function ('task resolved' events, and
        whatever else the app has) to that function, received a batch at a time and deleted
        as the host's trigger does, so those requests are counted too, until every queue is
        empty; each queue's last receive is an empty one, as the trigger's poll makes when
        its queue runs dry. The functions are the app's own, so they call the services as
        in the host. Returns how many messages were delivered, by the app setting naming
        their queue ("QUEUE_RESOLVED_QUEUE": 'task resolved' events)."""
        delivered = Counter()
        functions = _queue_functions()
        busy = True
        while busy:
            busy = False
            for setting, queue in self.queues.items():
                while messages := list(queue.receive_messages(messages_per_page=EVENT_BATCH,
                                                              max_messages=EVENT_BATCH, visibility_timeout=EVENT_HOLD)):
                    busy = True
                    for message in messages:
                        functions[setting](QueueMessage(id=message.id, body=message.content.encode(),
                                                        dequeue_count=message.dequeue_count,
                                                        pop_receipt=message.pop_receipt))
                        queue.delete_message(message.id, message.pop_receipt)
                        delivered[setting] += 1
        return delivered

    def sweep_repairs(self, step: Step, tasks: int) -> None:
        """The repair sweep once every intent written so far is due; it must find nothing to
        repair (the events were handled) and leave nothing queued."""
        time.sleep(REPAIR_DELAY + 1.1)  # intents become visible whole seconds after they were sent
        repaired = 0
        with self.step(step):
            for _ in range(1000):
                repaired += self.services.repairs.sweep()
                if not self.messages_left("QUEUE_REPAIR_QUEUE"):
                    break
        left = self.messages_left("QUEUE_REPAIR_QUEUE")
        expect(left == 0, f"{left} repair intents still queued after the sweep")
        expect(repaired == 0, f"the sweep repaired {repaired} resolutions that were already handled")
        step.calls = tasks

    def messages_left(self, setting: str) -> int:
        # A client of our own, outside the counter: checking must not add to the figures.
        client = QueueClient.from_connection_string(self.settings["AzureWebJobsStorage"], self.settings[setting])
        return client.get_queue_properties().approximate_message_count


@contextmanager
def in_process(connection: str):
    """An `InProcess` on tables and queues of its own, labelling requests for the block;
    the app's functions get these services from `get_services()` meanwhile."""
    settings = app_settings(connection)
    with Labeller(settings["QUEUE_TABLE_PREFIX"]) as labeller, _environment(settings):
        services = Services.build(Settings.from_environ())
        # Built while the labeller is in place, so their requests are counted and labelled.
        queues = {setting: QueueClient.from_connection_string(
            connection, settings[setting], message_decode_policy=TextBase64DecodePolicy(),
            raw_request_hook=OPERATIONS.on_request) for setting in _queue_functions()}
        with _serving(services):
            yield InProcess(settings, services, labeller, queues)


@contextmanager
def _serving(services: Services):
    """The functions' `get_services()` answers `services` for the block. The process's own Queue
    is built once from the environment and kept; a second harness in one process would
    otherwise find the first one's."""
    namespaces = {id(fn.__globals__): fn.__globals__ for fn in (f.get_user_function() for f in _functions())
                  if "get_services" in fn.__globals__}
    saved = {key: namespace["get_services"] for key, namespace in namespaces.items()}
    for namespace in namespaces.values():
        namespace["get_services"] = lambda: services
    try:
        yield
    finally:
        for key, namespace in namespaces.items():
            namespace["get_services"] = saved[key]


@contextmanager
def _environment(values: dict[str, str]):
    """App settings reach the services through the environment, as in the host."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def expect(condition, message: str) -> None:
    if not condition:
        raise RuntimeError(f"operation count is not trustworthy: {message}")


# -- one lifecycle, step by step ----------------------------------------------------------

API_STEPS = ("createTask", "claimWork", "reportCompleted")
HOST_STEPS = ("task-resolved event", "repair sweep", "background threads")


@dataclass(frozen=True)
class Sweep:
    """A time-driven sweep: the step's name, the `Queue` attribute whose `sweep()` the timer
    function calls (here with `now=`), and what it watches (which decides that `now`)."""

    step: str
    service: str
    watches: str

    def idle_step(self) -> str:
        return f"{self.step}, nothing due"


SWEEPS = (
    Sweep("claim resolver", "claim_resolver", "takenUntil"),
    # The watchdog's looks at the tasks' groups (once each group's item is due: its tasks are
    # all resolved by then, which is what the run leaves). Before the deadline resolver, as
    # time has it: a group made for its one task has its deadline indexed by the watchdog.
    Sweep("watchdog", "watchdog", "group watch"),
    Sweep("deadline resolver", "deadline_resolver", "deadline"),
    Sweep("task expiry sweep", "task_expiry", "task expires"),
    Sweep("worker expiry sweep", "worker_expiry", "worker expires"),
    Sweep("task queue expiry sweep", "task_queue_expiry", "task queue expires"),
    # The same timer's last sweep: artifacts and objects (the tasks' only ones are any the
    # queue writes itself, which expire with their task).
    Sweep("artifact expiry sweep", "artifact_expiry", "artifact expires"),
)
WORKER = ("bench", "counter")
RESOLVED = "QUEUE_RESOLVED_QUEUE"   # the app setting naming the queue of 'task resolved' events
MAX_SWEPT = 1000         # items one sweep call handles at most (its default `max_items`)


def add_arguments(parser) -> None:
    """The count's options, the same in every benchmark that counts lifecycles."""
    parser.add_argument("--count", type=int, default=100, help="lifecycles whose storage round trips are counted "
                                                              "in-process (default 100)")
    parser.add_argument("--group-per-task", action="store_true",
                        help="count tasks each in a group of its own (taskGroupId = taskId, Taskcluster's default) "
                             "instead of all in one group, like a decision task's")


def count(connection: str, lifecycles: int, progress, claim_batch: int = CLAIM_BATCH,
          group_per_task: bool = False) -> dict:
    if not 0 < lifecycles < MAX_SWEPT:
        raise ValueError(f"count between 1 and {MAX_SWEPT - 1} lifecycles: a sweep handles at most {MAX_SWEPT} "
                         "items a call")
    with in_process(connection) as harness:
        sweeps = [sweep for sweep in SWEEPS if hasattr(harness.services, sweep.service)]
        missing = [sweep.service for sweep in SWEEPS if sweep not in sweeps]
        if missing:
            progress(f"  the services have no {', '.join(missing)}: those sweeps are left out")
        names = API_STEPS + HOST_STEPS + tuple(s.step for s in sweeps) + tuple(s.idle_step() for s in sweeps)
        steps = {name: Step(name) for name in names}
        # One group for all tasks, like the tasks of one decision task.
        definition = task_definition(f"bench-{harness.prefix}/inprocess", task_group_id=new_slugid())
        # One lifecycle first: the task group row, the queue row and the worker row then
        # exist, as they do in steady state, and nothing first-time is counted. Its items
        # in the time indexes come due with the others', so the sweeps handle n + 1 tasks.
        warm_up = _lifecycles(harness, definition, 1, claim_batch, {name: Step(name) for name in names})
        progress(f"counting storage round trips over {lifecycles} lifecycles in-process "
                 f"(claimWork asks for {claim_batch})")
        harness.labeller.background = steps[HOST_STEPS[2]]
        claims = warm_up + _lifecycles(harness, definition, lifecycles, claim_batch, steps, group_per_task)
        with harness.step(steps[HOST_STEPS[2]]):   # what the threads hold yet, before the sweeps look
            harness.services.work_claimer.claim_table.flush_removals()
            harness.services.event_publisher.upkeep()
        harness.labeller.background = None
        progress(f"  the time-driven sweeps, each run just past what it watches: "
                 f"{', '.join(sweep.step for sweep in sweeps)}")
        _sweep_all(harness, sweeps, steps, definition["taskQueueId"], claims)
    return {**_summary(steps, sweeps, lifecycles, claim_batch), "group_per_task": group_per_task}


def _lifecycles(harness: InProcess, definition: dict, n: int, claim_batch: int,
                steps: dict[str, Step], group_per_task: bool = False) -> list[dict]:
    """n tasks through createTask, claimWork, reportCompleted, their 'task resolved' events
    and the repair sweep; the claims (claimWork's answers) of each."""
    services = harness.services
    create, claim, complete, events = (steps[name] for name in (*API_STEPS, HOST_STEPS[0]))
    with harness.step(create):
        for _ in range(n):
            task_id = new_slugid()
            services.task_calls.create(task_id, {**definition, "taskGroupId": task_id} if group_per_task else definition)
            create.calls += 1
    with harness.step(claim):
        claims = _claim_all(services, definition["taskQueueId"], n, claim_batch, claim)
    with harness.step(complete):
        for answer in claims:
            services.resolutions.completed(answer["status"]["taskId"], answer["runId"])
            complete.calls += 1
        # The group's count and the claimed row, finished after each call answered, are its work.
        expect(services.dependency_resolver.settled(), "resolutions still unfinished after 30 s")
    with harness.step(events):
        delivered = harness.deliver()[RESOLVED]
    # The services may handle resolutions some other way than by events: then none are sent.
    expect(delivered in (0, n), f"{delivered} 'task resolved' events for {n} resolutions")
    events.calls += delivered
    harness.sweep_repairs(steps[HOST_STEPS[1]], n)
    return claims


def _claim_all(services: Services, queue_id: str, n: int, claim_batch: int, step: Step) -> list[dict]:
    claimed: list[dict] = []
    while len(claimed) < n:
        answer = services.work_claimer.claim_work(queue_id, *WORKER, claim_batch)
        step.calls += 1
        expect(answer["tasks"], f"claimWork found nothing with {n - len(claimed)} tasks pending")
        claimed += answer["tasks"]
    return claimed


def _sweep_all(harness: InProcess, sweeps: list[Sweep], steps: dict[str, Step], queue_id: str,
               claims: list[dict]) -> None:
    """Each sweep once at a `now` just past everything it watches for these tasks, then twice
    more at the same `now` with nothing due: what one timer firing costs regardless of load
    (the last of the two, once the first has tidied up after the real sweep)."""
    services = harness.services
    task_ids = [answer["status"]["taskId"] for answer in claims]
    # Read before any sweep: an artifact's expiry is read from its task, which goes first.
    dues = {sweep.step: _due(services, sweep, queue_id, claims) for sweep in sweeps}
    for sweep in sweeps:
        now = dues[sweep.step] + PAST_DUE
        service = getattr(services, sweep.service)
        with harness.step(steps[sweep.step]):
            service.sweep(now=now)
        steps[sweep.step].calls = len(task_ids)
        for _ in range(2):
            idle = steps[sweep.idle_step()]
            idle.operations = idle.calls = 0
            idle.kinds.clear()
            with harness.step(idle):
                service.sweep(now=now)
            idle.calls = 1
        _check_swept(services, sweep, queue_id, task_ids)


def _due(services: Services, sweep: Sweep, queue_id: str, claims: list[dict]) -> datetime:
    """When the last of what `sweep` watches comes due, read through the API's own calls
    (outside any counted step)."""
    if sweep.watches == "takenUntil":
        return max(parse_iso(answer["takenUntil"]) for answer in claims)
    if sweep.watches in ("deadline", "task expires", "artifact expires"):
        definition = services.task_calls.definition(claims[-1]["status"]["taskId"])  # every task shares these
        return parse_iso(definition["deadline" if sweep.watches == "deadline" else "expires"])
    if sweep.watches == "group watch":   # each group's item: due a stall time after its first task, written by now
        return utcnow() + services.watchdog.stall
    if sweep.watches == "worker expires":
        return parse_iso(services.workers.get(queue_id, *WORKER, utcnow())["expires"])
    return parse_iso(services.task_queues.get(queue_id, utcnow())["expires"])


def _check_swept(services: Services, sweep: Sweep, queue_id: str, task_ids: list[str]) -> None:
    """The sweep did what it should, judged from the API's answers (not from its return
    value or the storage layout, which may change): claims and deadlines of tasks resolved
    in time change nothing; expired tasks, workers and task queues are gone."""
    if sweep.watches in ("takenUntil", "deadline", "group watch"):
        for task_id in task_ids:
            status = services.task_calls.status(task_id)
            expect(status["state"] == "completed" and len(status["runs"]) == 1,
                   f"after the {sweep.step} task {task_id} is {status['state']} with {len(status['runs'])} runs")
        return
    later = utcnow() + timedelta(days=3650)
    if sweep.watches == "artifact expires":   # the runs' results documents, by their blobs
        blobs = services.objects.blobs
        left = sum(blobs.size(blob_name(object_name(task_id, 0, RESULTS_NAME))) is not None for task_id in task_ids)
    elif sweep.watches == "task expires":
        left = sum(_found(services.task_calls.status, task_id) for task_id in task_ids)
    elif sweep.watches == "worker expires":
        left = _found(services.workers.get, queue_id, *WORKER, later)
    else:
        left = _found(services.task_queues.get, queue_id, later)
    expect(not left, f"{left} of what the {sweep.step} should have deleted still there")


def _found(call, *args) -> bool:
    try:
        call(*args)
    except NotFound:
        return False
    return True


def _summary(steps: dict[str, Step], sweeps: list[Sweep], lifecycles: int, claim_batch: int) -> dict:
    swept = lifecycles + 1  # the warm-up lifecycle's items come due with the others'
    out = {"lifecycles": lifecycles, "claim_batch": claim_batch, "tasks_swept": swept, "target": TARGET,
           "steps": {}, "idle_sweeps": {}}
    for name, step in steps.items():
        if name.endswith(", nothing due"):
            out["idle_sweeps"][name.removesuffix(", nothing due")] = {
                "operations": step.operations, "by_kind": dict(step.kinds.most_common())}
            continue
        per = lifecycles if name in API_STEPS + HOST_STEPS else swept
        out["steps"][name] = {
            "operations": step.operations,
            "per_lifecycle": round(step.operations / per, 2),
            "divided_by": per,
            "calls": step.calls,
            "seconds": round(step.seconds, 3),
            "by_kind_per_lifecycle": {kind: round(number / per, 2) for kind, number in step.kinds.most_common()},
        }
    by_step = out["steps"]
    api = sum(by_step[name]["operations"] for name in API_STEPS) / lifecycles
    host = sum(by_step[name]["operations"] for name in HOST_STEPS) / lifecycles
    timed = sum(by_step[sweep.step]["operations"] for sweep in sweeps) / swept
    out["api_per_lifecycle"] = round(api, 2)
    out["background_per_lifecycle"] = round(host, 2)
    out["sweeps_per_lifecycle"] = round(timed, 2)
    out["total_per_lifecycle"] = round(api + host + timed, 2)
    return out


# -- the table ------------------------------------------------------------------------------

def rows(ops: dict, number: int, after_total: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The round trips per lifecycle by step, the total (the headline), `after_total`, then
    each request's label, for the benchmarks' tables; `number` is the section's number."""
    steps = ops["steps"]
    out = [(f"{number}. storage round trips per lifecycle: counted in-process over {ops['lifecycles']} "
            f"lifecycles, one thread, claimWork asking for {ops['claim_batch']}", "")]

    def line(name: str, note: str = "") -> tuple[str, str]:
        step = steps[name]
        return (f"{name}{note}", f"{step['per_lifecycle']:8.2f}   ({step['operations']} / {step['divided_by']})")

    out += [line(name) for name in API_STEPS]
    out.append(("API total", f"{ops['api_per_lifecycle']:8.2f}"))
    notes = (" (host: queue trigger)", " (host: timer)", " (the mark stored, claim rows deleted)")
    out += [line(name, note) for name, note in zip(HOST_STEPS, notes)]
    out += [line(name, " (timer)") for name in steps if name not in API_STEPS + HOST_STEPS]
    out.append(("sweeps total", f"{ops['sweeps_per_lifecycle']:8.2f}   (each divided by the "
                                 f"{ops['tasks_swept']} tasks swept: n + the warm-up's)"))
    verdict = "met" if ops["total_per_lifecycle"] <= ops["target"] else "NOT met"
    out.append(("TOTAL round trips per lifecycle", f"{ops['total_per_lifecycle']:8.2f}   (target: at most "
                                                   f"{ops['target']}; {verdict})"))
    idle = ", ".join(f"{name.removesuffix(' sweep')} {figures['operations']}"
                     for name, figures in ops["idle_sweeps"].items())
    out.append(("each timer firing with nothing due", f"{idle}   (not in the total: a cost per firing, "
                                                       "not per task)"))
    out += after_total
    out.append(("round trips by kind, per lifecycle", ""))
    for name, step in steps.items():
        kinds = ", ".join(f"{kind} {number:g}" for kind, number in step["by_kind_per_lifecycle"].items())
        out.append((name, kinds or "-"))
    return out


def headline(ops: dict) -> str:
    return (f"headline: {ops['total_per_lifecycle']:.2f} storage round trips per full lifecycle, sweeps included "
            f"(target: at most {ops['target']})")


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.operation_counts [--count N]`: the count alone, on an Azurite of its own."""
    import argparse
    from devhost.azurite import Azurite
    from bench.report import progress
    parser = argparse.ArgumentParser(prog="python -m bench.operation_counts", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    with Azurite() as azurite:
        ops = count(azurite.connection_string, args.count, progress, group_per_task=args.group_per_task)
    for name, value in rows(ops, 4):
        print(f"{name:58s} {value}")
    print(headline(ops))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
