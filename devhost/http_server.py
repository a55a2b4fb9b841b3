"""HTTP triggers behind a threaded HTTP server (claimWork long-polls, so requests overlap).

Each connection is served by a thread of a pool that grows while every thread is busy (a
long-polling claimWork holds one for seconds) and keeps up to IDLE_THREADS waiting. The
official Python client opens a new connection for every call: socketserver's thread per
connection cost each call a thread start (0.15-0.25 ms of a 1 ms round trip, measured here).
Responses go out without Nagle's delay: a keep-alive client (Go's, Node's, requests'
sessions) otherwise waits for the delayed ACK of the headers, 40 ms, before it gets the body.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import queue
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from devhost.routes import RouteTemplate

log = logging.getLogger("devhost.http")
_date = (0, "")   # the last second a Date header was made for, and that header
IDLE_THREADS = 64   # threads kept waiting for connections; more are started while all are busy


class HttpFunction:
    def __init__(self, name: str, function, template: RouteTemplate, methods: set[str] | None) -> None:
        self.name = name
        self.function = function
        self.template = template
        self.methods = methods


def call_function(function, request):
    result = function(request)
    return asyncio.run(result) if inspect.isawaitable(result) else result


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    functions: list[HttpFunction] = []

    def log_message(self, format, *args) -> None:  # one structured line per request instead
        pass

    def date_time_string(self, timestamp=None) -> str:
        """The Date header, formatted once a second."""
        global _date
        second = int(time.time() if timestamp is None else timestamp)
        if _date[0] != second:
            _date = (second, super().date_time_string(second))
        return _date[1]

    def _serve(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
            parts = urlsplit(self.path)
        except ValueError as error:  # a framing Azure's front end would refuse before the app
            self.close_connection = True  # what follows on this connection cannot be framed
            self.send_error(400, f"Malformed request: {error}")
            log.info("%s %r -> 400 (malformed: %s)", self.command, self.path[:200], error)
            return
        status, headers, payload = self._dispatch(parts.path, parts.query, body)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        # The head and the body in one write (end_headers would send the head alone): each
        # write to a socket without Nagle's delay is a packet of its own.
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(payload)
        self.flush_headers()
        log.info("%s %s -> %d (%.0f ms)", self.command, _shown(parts.path), status, (time.monotonic() - started) * 1000)

    def _read_body(self) -> bytes:
        # A chunked body must be read to its end too: left unread, it would be taken for the
        # next request on this keep-alive connection.
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailer headers, up to the blank line
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError(f"Content-Length {length} is negative")
        return self.rfile.read(length) if length else b""

    def _dispatch(self, path: str, query: str, body: bytes) -> tuple[int, dict, bytes]:
        for function in self.functions:
            values = function.template.match(path)
            if values is None or (function.methods and self.command not in function.methods):
                continue
            host, port = self.server.server_address[:2]
            request = func.HttpRequest(
                method=self.command, url=f"http://{host}:{port}{self.path}", headers=dict(self.headers.items()),
                params=dict(parse_qsl(query, keep_blank_values=True)), route_params=values, body=body)
            try:
                response = call_function(function.function, request)
            except Exception:
                log.exception("http function %s failed", function.name)
                return 500, {"Content-Type": "application/json"}, json.dumps(
                    {"code": "InternalServerError", "message": f"function {function.name} failed"}).encode()
            headers = dict(response.headers)
            if response.mimetype:
                charset = f"; charset={response.charset}" if response.charset else ""
                headers["Content-Type"] = response.mimetype + charset
            return response.status_code, headers, response.get_body() or b""
        return 404, {"Content-Type": "text/plain"}, b"Not Found"

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve


class _Server(HTTPServer):
    # Connections waiting to be accepted: socketserver's 5 is overrun when dozens of
    # workers and a benchmark's clients connect at once.
    request_queue_size = 128

    def __init__(self, address, handler) -> None:
        self._connections: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0       # threads about to take a connection that nobody was handed to
        self._threads = 0
        super().__init__(address, handler)   # closes the server if it cannot bind: all is set by then

    def process_request(self, request, client_address) -> None:
        """Hand the connection to a waiting thread, or to a new one if none is waiting."""
        with self._lock:
            start = self._idle == 0
            if start:
                self._threads += 1
            else:
                self._idle -= 1
        self._connections.put((request, client_address))
        if start:
            threading.Thread(target=self._serve_connections, name="http-connection", daemon=True).start()

    def _serve_connections(self) -> None:
        while True:
            taken = self._connections.get()
            if taken is None:   # the server closed
                return
            request, client_address = taken
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
            with self._lock:
                if self._idle >= IDLE_THREADS:
                    self._threads -= 1
                    return
                self._idle += 1

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            waiting = self._threads
        for _ in range(waiting):
            self._connections.put(None)


def make_server(host: str, port: int, functions: list[HttpFunction]) -> HTTPServer:
    ordered = sorted(functions, key=lambda function: function.template.precedence)
    handler = type("Handler", (_Handler,), {"functions": ordered})
    return _Server((host, port), handler)


# A hook's trigger token travels in the path (`.../trigger/<token>`, Taskcluster's design): a
# secret, so the log shows where it was, not what.
_TRIGGER_TOKEN = re.compile(r"(/trigger/)[^/]+$")


def _shown(path: str) -> str:
    return _TRIGGER_TOKEN.sub(r"\1(token)", path)
