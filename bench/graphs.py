"""What the task-graph benchmarks share (`bench.graph`, `bench.decision_graph`): the graph's
shape, its creation in one scheduler-API PUT, the run's checks (every task completed
exactly once, as `inspect` says), the figures per part of the graph, and what went wrong
inside the host, from its log."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import requests

from devhost.azurite import Azurite
from shared.domain.timestamps import to_iso, utcnow
from tests.conftest import Server, shared_broker

from bench import http_lifecycles
from bench import local_host
from bench.memory import group_pids, peaks, peaks_text
from bench.report import RESULTS, progress
from bench.tasks import task_definition

DEADLINE = timedelta(hours=12)   # the tasks must outlive the longest run a bound allows
ROOT, FAN_IN = "root", "fan-in"
MAX_REQUEST_TASKS = 10_000   # the most tasks one createTaskGraph or extendTaskGraph request holds
MAX_REQUIRES = 10_000        # the most labels one task may require
# An extension creates each link of a chain after the next one (dependents first), one
# insertion at a time: 500 links measure a link's latency as well as 5,000 would.
MAX_CHAIN = 500
# Workers retry as the official client does by default (5xx and connection errors, with
# backoff): a long run on a busy machine meets a transient storage error now and then, and
# a real worker would not give up. Every 5xx the host answered is counted from its log.
CLIENT_RETRIES = 5
PUT_ATTEMPTS = 3          # createTaskGraph is idempotent: the same request again resumes it
# A claimWork answer lost to a 5xx leaves its tasks claimed until the claim expires: five
# minutes, not the default twenty, so such a loss shows in the figures without ruining them.
SETTINGS = {**local_host.SETTINGS, "TASK_CLAIM_TIMEOUT": "300"}


def add_arguments(parser, what: str) -> None:
    """The options of a graph run: its workers and its bound; `what` names what must finish."""
    parser.add_argument("--workers", type=int, default=8, help="concurrent no-op workers (default 8)")
    parser.add_argument("--bound", type=float, default=None, help=f"seconds {what}, and then the run, may take "
                                                                  "before the run fails (default 600 + 0.5 s per task)")


def bound(args, tasks: int) -> float:
    return args.bound if args.bound is not None else 600 + 0.5 * tasks


# -- the graph ----------------------------------------------------------------------------

def shape(n: int, chain_share: float = 0.05) -> dict[str, list[str]]:
    """label -> the labels it requires, in an order where each label comes after those it
    requires: a root, its children, a fan-in requiring them all, then a chain of
    `chain_share` of the tasks, at most MAX_CHAIN links (the chain measures latency, one
    link at a time; at 0.5 s a link, half of 10,000 tasks would be a 40-minute chain).

    A graph larger than one request (MAX_REQUEST_TASKS) is sent as a PUT and extensions,
    each holding a slice of the children and a sub-fan-in (`fan-in-00`, ...) requiring that
    slice (at most MAX_REQUIRES labels); the fan-in then requires the sub-fan-ins. Each
    slice fills its request, so a sub-fan-in is in the request of its children."""
    if n < 4:
        raise ValueError("a graph needs at least 4 tasks (root, 2 children, fan-in)")
    links = min(round(n * chain_share), MAX_CHAIN, n - 4)
    requires: dict[str, list[str]] = {ROOT: []}
    if n - links - 2 <= MAX_REQUEST_TASKS - 1:
        children = [f"child-{i:05d}" for i in range(n - links - 2)]
        requires.update({child: [ROOT] for child in children})
        requires[FAN_IN] = children
    else:
        left, room, subs = n - links - 2, MAX_REQUEST_TASKS - 1, []   # children and sub-fan-ins
        while left:
            size = min(room, left, MAX_REQUIRES + 1) - 1
            first = len(requires) - 1 - len(subs)
            slice_ = [f"child-{first + i:05d}" for i in range(size)]
            requires.update({child: [ROOT] for child in slice_})
            subs.append(f"{FAN_IN}-{len(subs):02d}")
            requires[subs[-1]] = slice_
            left, room = left - size - 1, MAX_REQUEST_TASKS
        requires[FAN_IN] = subs
    previous = FAN_IN
    for link in (f"chain-{i:05d}" for i in range(links)):
        requires[link] = [previous]
        previous = link
    return requires


def requests_of(requires: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    """The graph in requests of at most MAX_REQUEST_TASKS labels, in order: the first is the
    PUT, each later one an extension whose labels require labels of itself or of earlier ones."""
    labels = list(requires)
    return [{label: requires[label] for label in labels[start:start + MAX_REQUEST_TASKS]}
            for start in range(0, len(labels), MAX_REQUEST_TASKS)]


def parts(requires: dict[str, list[str]]) -> dict[str, list[str]]:
    return {"children": [label for label in requires if label.startswith("child-")],
            "sub_fan_ins": [label for label in requires if label.startswith(f"{FAN_IN}-")],
            "chain": [label for label in requires if label.startswith("chain-")]}


def edges(requires: dict[str, list[str]]) -> int:
    return sum(len(required) for required in requires.values())


def node_task(task_queue_id: str, task_group_id: str) -> dict:
    """Every node's task: the same no-op task, like the tasks of one decision."""
    return task_definition(task_queue_id, task_group_id, deadline=to_iso(utcnow() + DEADLINE))


def graph_request(requires: dict[str, list[str]], task_queue_id: str, graph_id: str) -> dict:
    """The createTaskGraph body (the graph's id is its tasks' taskGroupId)."""
    task = node_task(task_queue_id, graph_id)
    return {"tasks": {label: ({"requires": required, "task": task} if required else {"task": task})
                      for label, required in requires.items()}}


# -- over HTTP ------------------------------------------------------------------------------

@contextmanager
def host(azurite: Azurite, log_dir: Path, name: str, out: dict, throttled=None):
    """The local host for a graph run (its storage through `throttled`, the throttling
    proxy, if given); afterwards `out` gets the host's errors from its log and the peak
    memory of every process of the run, and the log is kept in bench/results/ when anything
    went wrong (a 5xx, a warning or an error logged, a failed run)."""
    with local_host.running(throttled or azurite, log_dir, progress, SETTINGS) as server:
        yield server
        out["peak_memory_mib"] = peaks(watched(server, azurite, throttled))
        progress(f"peak resident memory: {peaks_text(out['peak_memory_mib'])}")
    out["host_errors"] = host_errors(server.log_path)
    if out["host_errors"]["http_5xx"] or out["host_errors"]["logged"] or "failed" in out:
        RESULTS.mkdir(exist_ok=True)
        out["host_log"] = str(shutil.copy(server.log_path, RESULTS / f"{name}-devhost-{server.log_path.name}"))
        progress(f"host log kept: {out['host_log']}")
    if out["host_errors"]["http_5xx"]:
        progress(f"the host answered {sum(out['host_errors']['http_5xx'].values())} requests with 5xx "
                 f"(retried by the clients): {out['host_errors']['http_5xx']}")


def watched(server: Server, azurite: Azurite, throttled=None) -> dict[str, list[int]]:
    """The processes of a run by name, whose memory and CPU time it reports."""
    processes = {"host": [server.process.pid], "Azurite": group_pids(azurite.process.pid),
                 "RabbitMQ": group_pids(shared_broker().process.pid), "benchmark (clients)": [os.getpid()]}
    if throttled:
        processes["throttling proxy"] = [throttled.process.pid]
    return processes


def signed_session(server) -> requests.Session:
    """HTTP calls as the test servers' root client makes them (every call is authenticated)."""
    session = requests.Session()
    session.auth = server.auth
    return session


def put_graph(session: requests.Session, url: str, body: bytes, timeout: float,
              method: str = "PUT") -> tuple[requests.Response | None, list[dict]]:
    """PUT the createTaskGraph request (or POST an extension to `url`), again after a 5xx or
    a lost answer (both resume); the last answer (None if none came) and every attempt's outcome."""
    attempts = []
    answer = None
    for _ in range(PUT_ATTEMPTS):
        began = time.perf_counter()
        try:
            answer = session.request(method, url, data=body, headers={"Content-Type": "application/json"},
                                     timeout=timeout)
        except requests.RequestException as error:
            answer = None
            attempts.append({"error": repr(error), "seconds": round(time.perf_counter() - began, 3)})
        else:
            attempts.append({"status": answer.status_code, "seconds": round(time.perf_counter() - began, 3)})
            if answer.status_code < 500:
                break
            attempts[-1]["body"] = answer.text[:2000]
        progress(f"{method} attempt {len(attempts)} failed: {attempts[-1]}")
    return answer, attempts


def inspected_labels(session: requests.Session, url: str, log: http_lifecycles.WorkLog,
                     n: int) -> tuple[dict[str, str], str | None]:
    """After the run: GET <graph>/inspect must show all `n` tasks completed, and the workers
    must have completed each exactly once. taskId -> label, and why the run failed (or None)."""
    inspected = session.get(f"{url}/inspect", timeout=max(600.0, n / 50))   # a read per task
    if inspected.status_code != 200:
        return {}, f"GET inspect answered {inspected.status_code}: {inspected.text[:2000]}"
    labels = {entry["taskId"]: entry["label"] for entry in inspected.json()["tasks"]}
    states = Counter(entry["state"] for entry in inspected.json()["tasks"])
    if len(labels) != n or states != Counter({"completed": n}):
        return labels, f"inspect after the run shows {len(labels)} tasks in states {dict(states)}"
    try:
        http_lifecycles.check(log, list(labels))
    except RuntimeError as wrong:
        return labels, str(wrong)
    return labels, None


def part_figures(requires: dict[str, list[str]], at: dict[str, float], created: float) -> dict:
    """Each part of the graph on its own, from the workers' completion times by label
    (`created`: when the whole graph had been created)."""
    split = parts(requires)
    children, chain = split["children"], split["chain"]
    root_done, fan_in_done = at[ROOT], at[FAN_IN]
    children_first, children_done = min(at[c] for c in children), max(at[c] for c in children)
    chain_done = at[chain[-1]] if chain else fan_in_done
    return {
        "root": {"completed_after_creation_s": round(root_done - created, 3)},
        "fan_out": {"tasks": len(children),
                    "first_child_after_root_s": round(children_first - root_done, 3),
                    "seconds": round(children_done - root_done, 3),
                    "tasks_per_s": round(len(children) / (children_done - root_done), 1)},
        "fan_in": {"requirements": len(requires[FAN_IN]), "sub_fan_ins": len(split["sub_fan_ins"]),
                   "completed_after_last_child_s": round(fan_in_done - children_done, 3)},
        "chain": {"tasks": len(chain), "seconds": round(chain_done - fan_in_done, 3),
                  "seconds_per_link": round((chain_done - fan_in_done) / len(chain), 4) if chain else None,
                  "tasks_per_s": round(len(chain) / (chain_done - fan_in_done), 1) if chain else None},
    }


def batching(log: http_lifecycles.WorkLog, children: set[str]) -> dict:
    """Tasks per claimWork answer while the fan-out's tasks were pending: the answers
    received between the first that handed out a child and the last that did, empty ones
    included (8 workers drain hundreds of children; a short answer there is batching lost)."""
    with log.lock:
        answers = sorted(log.answers)
    times = [answered for answered, task_ids in answers if children.intersection(task_ids)]
    if not times:
        return {}
    window = [len(task_ids) for answered, task_ids in answers if times[0] <= answered <= times[-1]]
    return {"answers": len(window), "tasks": sum(window), "mean_tasks_per_answer": round(sum(window) / len(window), 2),
            "tasks_per_answer": dict(sorted(Counter(window).items()))}


def failed(out: dict, server: Server, reason: str) -> dict:
    """The evidence of a failed run: why, and what the host logged last."""
    progress(f"FAILED: {reason}")
    out["failed"] = reason
    if server.log_path is not None:   # else another queue (see `against`), whose logs are its own
        tail = server.log_path.read_text(errors="replace").splitlines()[-60:]
        progress("host log tail:\n    " + "\n    ".join(tail))
        out["host_log_tail"] = tail
    return out


_REQUEST_LINE = re.compile(r"devhost\.http: (\w+) (\S+) -> (\d{3})")


def host_errors(log_path: Path) -> dict:
    """What went wrong inside the host during the run, from its log: requests answered with
    5xx (by API call), claims that expired (tasks claimed by an answer the worker never got
    wait for that), and logged errors and warnings (by logger)."""
    http_5xx, logged, expired = Counter(), Counter(), 0
    for line in log_path.read_text(errors="replace").splitlines():
        expired += "queue.time: task" in line and line.endswith(": claim expired")
        request = _REQUEST_LINE.search(line)
        if request and request.group(3).startswith("5"):
            http_5xx[f"{request.group(3)} {request.group(1)} {_call(request.group(2))}"] += 1
        level = re.match(r"\S+ \S+ (ERROR|WARNING) +(\S+):", line)
        if level:
            logged[f"{level.group(1)} {level.group(2)}"] += 1
    return {"http_5xx": dict(http_5xx), "claims_expired": expired, "logged": dict(logged.most_common())}


def _call(path: str) -> str:
    for marker, name in (("/claim-work/", "claimWork"), ("/completed", "reportCompleted"), ("/status", "status"),
                         ("/inspect", "inspect"), ("/task-graph/", "createTaskGraph"), ("/task/", "createTask")):
        if marker in path:
            return name
    return path


def host_rows(http: dict) -> list[tuple[str, str]]:
    """What went wrong in the host (from its log), and every process's peak memory."""
    errors = http.get("host_errors", {})
    rows = [("host answers 5xx (retried)", ", ".join(f"{k}: {v}x" for k, v in errors.get("http_5xx", {}).items())
             or "none")]
    if errors.get("claims_expired"):
        rows.append(("claims expired", f"{errors['claims_expired']} (after TASK_CLAIM_TIMEOUT "
                                       f"{SETTINGS['TASK_CLAIM_TIMEOUT']} s; their tasks then ran again)"))
    if errors.get("logged"):
        rows.append(("host log errors/warnings", ", ".join(f"{k}: {v}x" for k, v in errors["logged"].items())))
    if "host_log" in http:
        rows.append(("host log kept", http["host_log"]))
    if "peak_memory_mib" in http:
        rows.append(("peak resident memory", peaks_text(http["peak_memory_mib"])))
    return rows


def batching_text(figures: dict) -> str:
    if not figures:
        return "-"
    spread = ", ".join(f"{k}: {v}x" for k, v in figures["tasks_per_answer"].items())
    return f"{figures['mean_tasks_per_answer']:8.2f}   ({figures['answers']} answers: {spread})"
