"""What verifying the caller costs, per request: in process, no storage, no HTTP.

    python -m bench.auth [--requests N]

For each kind of caller, N requests signed as the official client signs them (mohawk, a
payload hash, the client's `ext`) go through everything dispatch and the service hook run
to authenticate and authorize them: `Access.authenticate` (the Hawk MAC or bewit, a
temporary credentials' certificate, role expansion) and the endpoint's scope checks
(before the handler, and `call.authorize` on the stored task where the endpoint has one).
Printed: the median, p95 and mean per request, against the target of 1 ms. Requests are
signed before the clock starts: signing is the client's cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta
from typing import Callable

import mohawk
import taskcluster

from shared.api.access import Access
from shared.api.http import ApiRequest
from shared.config import Settings
from shared.domain import lifecycle, task_definition
from shared.domain.task_status import TaskStatus
from shared.domain.timestamps import to_iso, utcnow
from shared.services.claims.credentials import CredentialIssuer
from shared.storage.tables.task_table import TaskRecord

from bench.report import command_line, machine, table, write_json

ROOT_URL = "https://queue.example.com"
TARGET_MS = 1.0
CLIENTS = [
    {"clientId": "static/admin", "accessToken": "admin-token-" + "a" * 32, "scopes": ["*"]},
    {"clientId": "static/worker-pool", "accessToken": "worker-token-" + "w" * 31,
     "scopes": ["assume:worker-pool:bench/linux"]},
]
ROLES = [{"roleId": "worker-pool:*", "scopes": ["queue:claim-work:<..>", "queue:worker-id:workers/*"]}]
QUEUE_ID = "bench/linux"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.auth", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per kind of caller")
    return parser.parse_args(argv)


def signed(credentials: dict, method: str, path: str, body: dict | None = None, **options) -> ApiRequest:
    """The request as the Queue receives it, signed by the official client's means."""
    content = json.dumps(body).encode() if body is not None else b""
    ext = taskcluster.Queue({"rootUrl": ROOT_URL, "credentials": dict(credentials), **options}).makeHawkExt()
    header = mohawk.Sender({"id": credentials["clientId"], "key": credentials["accessToken"], "algorithm": "sha256"},
                           ROOT_URL + path, method, content=content,
                           content_type="application/json" if body is not None else "", ext=ext or None)
    headers = {"Authorization": header.request_header, "Host": "queue.example.com",
               **({"Content-Type": "application/json"} if body is not None else {})}
    return ApiRequest.from_url(method, ROOT_URL + path, "/queue/v1", content, headers)


def claimed_task() -> tuple[str, dict, TaskRecord]:
    """A task with 20 scopes, claimed by workers/w1 (the caller issues its claim's credentials)."""
    now = utcnow()
    task_id = taskcluster.slugId()
    definition = task_definition.normalize(task_id, {
        "taskQueueId": QUEUE_ID, "created": to_iso(now), "deadline": to_iso(now + timedelta(hours=1)),
        "scopes": [f"secrets:get:bench/{n}" for n in range(20)], "routes": ["index.bench.latest"],
        "payload": {}, "metadata": {"name": "bench", "description": "", "owner": "bench@example.com",
                                    "source": "https://example.com"}}, now)
    until = now + timedelta(minutes=20)
    status = lifecycle.claim(lifecycle.schedule(TaskStatus.new(task_id, definition), now), 0, "workers", "w1",
                             now, until)
    return task_id, definition, TaskRecord(definition, status, definition)


def verify(access: Access, endpoint: str, request: ApiRequest, params: dict, body=None, stored=None) -> None:
    """What dispatch and the service hook do to authenticate and authorize one request."""
    guard = access.guard(endpoint, request, params)
    guard.check_url()
    guard.check_request(body)
    if stored is not None:
        guard.authorize(stored)


def scenarios(access: Access, issuer: CredentialIssuer, count: int) -> dict[str, list[Callable[[], None]]]:
    admin, pool = ({key: client[key] for key in ("clientId", "accessToken")} for client in CLIENTS)
    task_id, definition, record = claimed_task()
    worker = issuer.for_run(task_id, 0, "workers", "w1", definition["scopes"], utcnow(),
                            utcnow() + timedelta(minutes=20))
    create_body = {key: definition[key] for key in ("taskQueueId", "created", "deadline", "scopes", "routes",
                                                   "payload", "metadata")}
    claim_body = {"workerGroup": "workers", "workerId": "w1", "tasks": 4}
    status_path = f"/api/queue/v1/task/{task_id}/status"
    resolve_path = f"/api/queue/v1/task/{task_id}/runs/0/completed"
    bewit = taskcluster.Queue({"rootUrl": ROOT_URL, "credentials": dict(admin)}).buildSignedUrl(
        "listTaskQueues", expiration=3600)
    fresh = [issuer.for_run(taskcluster.slugId(), 0, "workers", "w1", [], utcnow(), utcnow() + timedelta(minutes=20))
             for _ in range(count)]
    return {
        "createTask, static client with *, 20 task scopes and a route": [
            lambda r=signed(admin, "PUT", f"/api/queue/v1/task/{task_id}", create_body):
            verify(access, "createTask", r, {"taskId": task_id}, create_body, definition) for _ in range(count)],
        "claimWork, static client through a parameterized role": [
            lambda r=signed(pool, "POST", "/api/queue/v1/claim-work/bench%2Flinux", claim_body):
            verify(access, "claimWork", r, {"taskQueueId": QUEUE_ID}, claim_body) for _ in range(count)],
        "reportCompleted, the claim's temporary credentials (certificate, run binding)": [
            lambda r=signed(worker, "POST", resolve_path):
            verify(access, "reportCompleted", r, {"taskId": task_id, "runId": "0"}, None, record)
            for _ in range(count)],
        "reportCompleted, new temporary credentials every request (no cache)": [
            lambda r=signed(credentials, "POST", resolve_path):
            _refused_for_another_run(access, r, task_id, record) for credentials in fresh],
        "status, temporary credentials narrowed by authorizedScopes": [
            lambda r=signed(worker, "GET", status_path, authorizedScopes=["queue:status:*"]):
            verify(access, "status", r, {"taskId": task_id}) for _ in range(count)],
        "listTaskQueues by a bewit (buildSignedUrl)": [
            lambda r=ApiRequest.from_url("GET", bewit, "/queue/v1", b"", {"Host": "queue.example.com"}):
            verify(access, "listTaskQueues", r, {}) for _ in range(count)],
        "status without credentials (the anonymous scopes)": [
            lambda r=ApiRequest.from_url("GET", ROOT_URL + status_path, "/queue/v1", b"",
                                         {"Host": "queue.example.com"}):
            verify(access, "status", r, {"taskId": task_id}) for _ in range(count)],
    }


def _refused_for_another_run(access: Access, request: ApiRequest, task_id: str, record: TaskRecord) -> None:
    """Fresh credentials are another task's: authenticated, then refused (the whole cost)."""
    try:
        verify(access, "reportCompleted", request, {"taskId": task_id, "runId": "0"}, None, record)
    except Exception as refusal:   # InsufficientScopes, as expected
        assert refusal.code == "InsufficientScopes", refusal
    else:
        raise AssertionError("credentials of another run were accepted")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    settings = Settings("memory", "", 1200, 1, "queue", "issuer-token-" + "q" * 31,
                        static_clients=json.dumps(CLIENTS), roles=json.dumps(ROLES), public_url=ROOT_URL)
    access = Access.from_settings(settings)
    issuer = CredentialIssuer(settings.credentials_client_id, settings.credentials_access_token)
    rows, figures = [("per request: median / p95 / mean (target < 1 ms)", "")], {}
    for name, calls in scenarios(access, issuer, args.requests).items():
        calls[0]()   # the first of a kind fills the caches it may use
        timings = []
        for call in calls:
            started = time.perf_counter()
            call()
            timings.append(time.perf_counter() - started)
        timings.sort()
        median, p95 = statistics.median(timings) * 1000, timings[int(0.95 * (len(timings) - 1))] * 1000
        mean = statistics.fmean(timings) * 1000
        figures[name] = {"median_ms": round(median, 3), "p95_ms": round(p95, 3), "mean_ms": round(mean, 3)}
        rows.append((name, f"{median:.3f} / {p95:.3f} / {mean:.3f} ms"))
    worst = max(figure["p95_ms"] for figure in figures.values())
    print(table(rows))
    print(f"\nheadline: verification costs at most {worst:.3f} ms per request at p95 "
          f"({'within' if worst < TARGET_MS else 'OVER'} the {TARGET_MS} ms target)")
    path = write_json("auth", {"machine": machine(), "command": command_line("bench.auth"),
                               "requests": args.requests, "figures": figures})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
