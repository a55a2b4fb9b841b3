"""The throttling proxy: one listener per storage service (blob, queue, table), each
forwarding to the same service of Azurite, past a `Throttle` shared by all three (the
account's target counts every service's requests).

A request the throttle refuses is answered 503 ServerBusy without reaching Azurite. One it
serves is forwarded over kept-alive connections (the project's own `Connections`), and its
answer relayed, unless the throttle says it times out: then Azurite has carried it out and
the client gets 500 OperationTimedOut, as from Azure near its limits.

`GET /_throttling/counts` on any of the three ports answers the counts as JSON (by partition:
requests and units served, refused, timed out; the seconds they cover); `DELETE` answers
them too, and starts them again. No storage path begins so (Azurite's begin with the account).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from shared.storage.client.connections import Answer, Connections

from devhost.throttling import answers
from devhost.throttling import costs
from devhost.throttling.targets import Throttle

SERVICES = ("blob", "queue", "table")
COUNTS_PATH = "/_throttling/counts"
POOL_SIZE = 256
IDLE_CLIENT_SECONDS = 300   # as Azurite here keeps an idle connection (devhost.azurite)
# Set by the proxy on the connection, or by the client for the whole request: not forwarded.
_NOT_FORWARDED = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "accept-encoding",
                  "proxy-connection", "te", "upgrade", "expect"}
_NOT_RELAYED = {"content-length", "transfer-encoding", "connection", "keep-alive"}


class ThrottlingProxy:
    """Listeners on 127.0.0.1 in front of Azurite's services at `upstream` (service -> port)."""

    def __init__(self, upstream: dict[str, int], throttle: Throttle, host: str = "127.0.0.1") -> None:
        self.throttle = throttle
        self._servers = {service: _Listener((host, 0), service, Connections("http", "127.0.0.1", port, POOL_SIZE),
                                            throttle) for service, port in upstream.items()}
        self.ports = {service: server.server_address[1] for service, server in self._servers.items()}
        self._threads: list[threading.Thread] = []

    def start(self) -> ThrottlingProxy:
        for service, server in self._servers.items():
            thread = threading.Thread(target=server.serve_forever, name=f"throttling-{service}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()

    def connection_string(self, upstream: str) -> str:
        """`upstream` (Azurite's connection string) with each proxied service's endpoint moved here."""
        return endpoints_moved(upstream, self.ports)

    def __enter__(self) -> ThrottlingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def endpoints_moved(connection: str, ports: dict[str, int]) -> str:
    """`connection` with the endpoint of each service in `ports` on that local port (the
    account's path kept)."""
    settings = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
    for service, port in ports.items():
        name = f"{service.capitalize()}Endpoint"
        if name not in settings:
            raise ValueError(f"the connection string names no {name}: the proxy fronts Azurite's endpoints only")
        parts = urlsplit(settings[name])
        settings[name] = f"http://127.0.0.1:{port}{parts.path}"
    return "".join(f"{name}={value};" for name, value in settings.items())


def upstream_ports(connection: str) -> dict[str, int]:
    """Each service's local port, from the connection string of an Azurite."""
    settings = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
    ports = {}
    for service in SERVICES:
        parts = urlsplit(settings.get(f"{service.capitalize()}Endpoint", ""))
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
            raise ValueError(f"the {service} endpoint is not a local Azurite's (http://127.0.0.1:<port>/<account>)")
        ports[service] = parts.port
    return ports


class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, address, service: str, upstream: Connections, throttle: Throttle) -> None:
        self.service, self.upstream, self.throttle = service, upstream, throttle
        super().__init__(address, _Handler)

    def handle_error(self, request, client_address) -> None:
        pass   # a client gone in the middle of its answer (a host killed): nothing to report


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = IDLE_CLIENT_SECONDS
    server: _Listener

    def log_message(self, format, *args) -> None:   # noqa: A002 - the base class's name
        pass   # a line per request would cost more than the proxy's own work

    def handle_one_request(self) -> None:
        """BaseHTTPRequestHandler's, for any method (MERGE included)."""
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline or len(self.raw_requestline) > 65536:
                self.close_connection = True
                return
            if self.parse_request():
                self._relay()
                self.wfile.flush()
        except TimeoutError:
            self.close_connection = True

    def _relay(self) -> None:
        body = self._body()
        if self.path.startswith(COUNTS_PATH):
            return self._counts()
        service, throttle = self.server.service, self.server.throttle
        charge = costs.of(service, self.command, self.path, body)
        verdict = throttle.admit(charge)
        version = self.headers.get("x-ms-version")
        if verdict.refusal:
            return self._send(answers.error(service, answers.BUSY, verdict.refusal, version, self.command == "HEAD"))
        headers = {name: value for name, value in self.headers.items() if name.lower() not in _NOT_FORWARDED}
        try:
            answer = self.server.upstream.send(self.command, self.path, body, headers)
        except (ServiceRequestError, ServiceResponseError):
            self.close_connection = True   # as a storage front end that lost its back end: no answer
            return
        if charge.reads_rows and answer.status == 200:
            throttle.owe(charge, costs.rows_in(charge, answer.data) - charge.units)
        if verdict.time_out:
            return self._send(answers.error(service, answers.TIMED_OUT, answers.TIMED_OUT_MESSAGE, version,
                                            self.command == "HEAD"))
        self._send(_relayed(answer, self.command == "HEAD"))

    def _body(self) -> bytes | None:
        """The request's body; None if it has none (no length sent, so none is forwarded)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while size := int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
            while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass   # the trailer
            return b"".join(parts)
        length = self.headers.get("Content-Length")
        return self.rfile.read(int(length)) if length is not None else None

    def _counts(self) -> None:
        counts = self.server.throttle.counts()
        if self.command == "DELETE":
            self.server.throttle.reset()
        body = json.dumps(counts).encode()
        self._send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                   + body)

    def _send(self, data: bytes) -> None:
        self.wfile.write(data)   # one write: headers and body in one segment


def _relayed(answer: Answer, head_only: bool) -> bytes:
    """Azurite's answer, as it came but for its framing (a body of a known length)."""
    lines = [f"HTTP/1.1 {answer.status} {answer.reason}"]
    lines += [f"{name}: {value}" for name, value in answer.headers.items() if name not in _NOT_RELAYED]
    if head_only:   # a HEAD's length is the resource's, not of a body sent
        if "content-length" in answer.headers:
            lines.append(f"content-length: {answer.headers['content-length']}")
    elif answer.status not in (204, 304):
        lines.append(f"content-length: {len(answer.data)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else answer.data)
