"""A local stand-in for the Azure Resource Manager endpoints the Container Apps provider calls,
and for the managed identity endpoint it signs in with.

Served over real HTTP: the SDK's bearer-token policy refuses plain HTTP for ARM, so ARM is
HTTPS with a self-signed certificate the client is told to trust (`connection_verify`); the
identity endpoint is plain HTTP on loopback, as App Service's is (`IDENTITY_ENDPOINT`,
`IDENTITY_HEADER`, read by azure-identity's ManagedIdentityCredential). ARM accepts only
the tokens the identity endpoint issued.

ARM's side: starting a job execution (POST .../jobs/<job>/start, 202 and a Location polled
until the operation is done), listing and reading executions, and stopping one (also a
long-running operation). A started execution runs a real local process with the container's
environment, as the local provider runs a worker; its status follows the process (Running,
Succeeded, Failed) unless stopped (Stopped).

Faults a test switches on: answers 429 with Retry-After, 500 before or after carrying out a
start, 500 while polling, a refusal with an ARM error code, executions that never start
(Processing for ever), and `kill` for one that dies midway.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from devhost.tls import self_signed_certificate
from shared.providers.base import ENV_WORKER_ID
from shared.providers.local import ProcessId, WorkerProcesses

JOB_PATH = re.compile(r"/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.App/jobs/([^/]+)(/.*)?$")


@dataclass
class Execution:
    name: str
    job: str
    template: dict
    process: ProcessId | None = None
    stopped: bool = False

    @property
    def worker_id(self) -> str | None:
        env = self.template.get("containers", [{}])[0].get("env", [])
        return next((item["value"] for item in env if item["name"] == ENV_WORKER_ID), None)


@dataclass
class Faults:
    throttled_starts: int = 0          # next starts answered 429
    retry_after: int = 1
    failed_starts: int = 0             # next starts answered 500 ...
    carried_out: bool = False          # ... after the execution was created
    failed_polls: int = 0              # next operation polls answered 500
    refusal: tuple[int, str] | None = None   # every start answered (status, ARM error code)
    never_start: bool = False          # executions stay Processing, no process


class ArmStandIn:
    def __init__(self, directory: Path, command: list[str], location: str = "westeurope"):
        self.command, self.location = command, location
        self.processes = WorkerProcesses(directory / "executions", grace=2)
        self.cert_path, key_path = self_signed_certificate(directory)
        self.identity_header = secrets.token_urlsafe(16)
        self.faults = Faults()
        self.executions: dict[str, Execution] = {}
        self.requests: list[tuple[str, str, int]] = []
        self.tokens_issued: list[str] = []
        self._operations: dict[str, dict] = {}
        self._lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        self._arm = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, self._arm_request))
        self._arm.socket = context.wrap_socket(self._arm.socket, server_side=True)
        self._identity = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, self._identity_request))
        for server in (self._arm, self._identity):
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self._arm.server_address[1]}"

    @property
    def identity_endpoint(self) -> str:
        return f"http://127.0.0.1:{self._identity.server_address[1]}/msi/token"

    def close(self) -> None:
        for server in (self._arm, self._identity):
            server.shutdown()
            server.server_close()
        self.processes.stop_all()

    # --- what tests look at and do

    def executions_of(self, worker_id: str) -> list[Execution]:
        return [execution for execution in self.executions.values() if execution.worker_id == worker_id]

    def status(self, execution: Execution) -> str:
        if execution.stopped:
            return "Stopped"
        if execution.process is None:
            return "Processing"
        if self.processes.alive(execution.process):
            return "Running"
        return "Succeeded" if self.processes.exit_code(execution.process) == 0 else "Failed"

    def kill(self, execution_name: str) -> None:
        """The execution's container dies midway."""
        os.killpg(self.executions[execution_name].process.pid, signal.SIGKILL)

    # --- the identity endpoint (App Service's managed identity protocol)

    def _identity_request(self, method: str, url, headers, body: dict):
        query = parse_qs(url.query)
        if headers.get("X-IDENTITY-HEADER") != self.identity_header:
            return 401, {"error": "unknown identity header"}
        token = secrets.token_urlsafe(24)
        self.tokens_issued.append(token)
        return 200, {"access_token": token, "expires_on": str(int(time.time()) + 3600),
                     "resource": query["resource"][0], "token_type": "Bearer"}

    # --- ARM

    def _arm_request(self, method: str, url, headers, body: dict):
        authorization = headers.get("Authorization", "")
        if authorization.removeprefix("Bearer ") not in self.tokens_issued:
            return 401, _error("InvalidAuthenticationToken", "The access token is invalid.")
        if "/operationResults/" in url.path:
            return self._poll(url.path.rsplit("/", 1)[1])
        match = JOB_PATH.match(url.path)
        if not match:
            return 404, _error("NotFound", url.path)
        _, _, job, rest = match.groups()
        if method == "POST" and rest == "/start":
            return self._start(job, body)
        if method == "GET" and rest == "/executions":
            return 200, {"value": [self._json(e) for e in self.executions.values() if e.job == job]}
        found = re.fullmatch(r"/executions/([^/]+)(/stop)?", rest or "")
        execution = self.executions.get(found.group(1)) if found else None
        if execution is None:
            return 404, _error("ResourceNotFound", f"no execution {rest}")
        if method == "GET" and not found.group(2):
            return 200, self._json(execution)
        if method == "POST" and found.group(2):
            execution.stopped = True
            if execution.process:
                self.processes.terminate(execution.process)
            return self._accepted(None)
        return 405, _error("MethodNotAllowed", method)

    def _start(self, job: str, template: dict):
        faults = self.faults
        with self._lock:
            if faults.throttled_starts:
                faults.throttled_starts -= 1
                return 429, _error("TooManyRequests", "throttled"), {"Retry-After": str(faults.retry_after)}
            if faults.refusal:
                return faults.refusal[0], _error(faults.refusal[1], "refused")
            if faults.failed_starts and not faults.carried_out:
                faults.failed_starts -= 1
                return 500, _error("InternalServerError", "failed before starting")
            execution = Execution(f"{job}-{secrets.token_hex(4)}", job, template)
            self.executions[execution.name] = execution
        if not faults.never_start:
            env = {item["name"]: item["value"] for item in template["containers"][0].get("env", [])}
            execution.process = self.processes.spawn(execution.name, self.command, env)
        with self._lock:
            if faults.failed_starts:
                faults.failed_starts -= 1
                return 500, _error("InternalServerError", "failed after starting")
        return self._accepted({"name": execution.name, "id": self._id(execution)})

    def _accepted(self, result):
        operation = secrets.token_hex(8)
        self._operations[operation] = {"polls": 1, "result": result}
        location = (f"{self.base_url}/subscriptions/x/providers/Microsoft.App/locations/{self.location}"
                    f"/containerappsjobOperationResults/operationResults/{operation}?api-version=2026-07-01")
        return 202, result, {"Location": location, "Retry-After": "0"}

    def _poll(self, operation: str):
        with self._lock:
            if self.faults.failed_polls:
                self.faults.failed_polls -= 1
                return 500, _error("InternalServerError", "poll failed")
            state = self._operations[operation]
            state["polls"] -= 1
        if state["polls"] >= 0:
            return 202, None, {"Retry-After": "0"}
        return 200, state["result"]

    def _id(self, execution: Execution) -> str:
        job = f"/subscriptions/x/resourceGroups/x/providers/Microsoft.App/jobs/{execution.job}"
        return f"{job}/executions/{execution.name}"

    def _json(self, execution: Execution) -> dict:
        return {"id": self._id(execution), "name": execution.name, "type": "Microsoft.App/jobs/executions",
                "properties": {"status": self.status(execution), "template": execution.template}}


def _error(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


def _handler(stand_in: ArmStandIn, route):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            url = urlsplit(self.path)
            status, payload, *headers = route(self.command, url, self.headers, body)
            stand_in.requests.append((self.command, url.path, status))
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers[0] if headers else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, *args):
            pass

    return Handler
