"""Kept-alive HTTP connections to one storage endpoint, shared by the threads of a process.

A request takes the connection used last (the likeliest still open), sends, reads the whole
answer and gives the connection back. A connection idle longer than the server keeps it
(Azurite, like any Node server, closes after 5 s), or one the server has closed since, is
dropped before use rather than failing a request: a write sent on a connection closed under
it would come back as a lost answer, which costs a read to settle.

The HTTP/1.1 framing is our own, not `http.client`'s: storage answers are small and plain
(a status line, a few headers, a body of a known length or in chunks), and `http.client`
reads headers through the `email` package's parser, which took a tenth of a busy host's
Python time (a profile of the decision graph's run, all of it in the answers of table calls).

Failures map to azure-core's errors, which the callers tell apart: a connection that could
not be made is a `ServiceRequestError` (nothing was sent), one that failed after the request
went out a `ServiceResponseError` (the request may have landed).
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections import deque
from dataclasses import dataclass
from typing import Callable

import certifi
from urllib3.util.wait import wait_for_read
from azure.core.exceptions import (ServiceRequestError, ServiceRequestTimeoutError, ServiceResponseError,
                                   ServiceResponseTimeoutError)

log = logging.getLogger("storage.client")
CONNECT_SECONDS = 20.0
# An answer not begun within this is taken as lost (and the request repeated if it may be):
# Azure ends any operation at 30 s (500 OperationTimedOut), and Azurite was seen, under 16
# parallel creators, to leave a request unanswered until the timeout, which stalled every
# caller sharing that request's read or transaction.
READ_SECONDS = 35.0
IDLE_SECONDS = 4.0      # under Node's keep-alive of 5 s; Azure's front end keeps them for minutes
MAX_LINE = 65536        # a status or header line longer than this is no storage answer
ATTEMPTS = 5            # of a request whose answer was lost, or that could not be sent
BUSY_SECONDS = 60.0     # of backing off from a storage that keeps answering busy (Azure's throttling)
BACKOFF_CAP = 1.0       # seconds between two attempts at most: one waiting long keeps its chances
REFUSED = {408, 429, 503}               # storage refused the request before carrying it out
BUSY = {500, 502, 504} | REFUSED        # storage did not finish (or start) the request: try again


class Headers(dict):
    """An answer's headers by lower-cased name (HTTP's names are case-insensitive); a
    header sent more than once has its values joined by commas, as HTTP allows."""

    def get(self, name: str, default=None):
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str):
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name.lower())


@dataclass
class Answer:
    status: int
    reason: str
    headers: Headers
    data: bytes


class Malformed(ValueError):
    """An answer that is not HTTP/1.1 as framed here: the connection cannot be used again."""


class _Connection:
    """A socket and the buffered reader of its answers."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class Connections:
    """A pool of connections to `scheme://host:port`, through the proxy configured for it if any."""

    def __init__(self, scheme: str, host: str, port: int, size: int) -> None:
        self._scheme, self._host, self._port, self._size = scheme, host, port, size
        self._idle: deque[tuple[_Connection, float]] = deque()
        self._lock = threading.Lock()
        self._context = ssl.create_default_context(cafile=trusted_certificates()) if scheme == "https" else None
        self._proxy = _proxy_for(scheme, host)
        default_port = {"http": 80, "https": 443}.get(scheme)
        name = f"[{host}]" if ":" in host else host
        self._host_header = name if port == default_port else f"{name}:{port}"

    def send(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> Answer:
        """Send one request for `target` (path and query) and read its whole answer."""
        if self._proxy and self._scheme == "http":
            target = f"http://{self._host}:{self._port}{target}"   # a plain proxy forwards absolute URLs
        request = _request(method, target, self._host_header, body, headers)
        connection = self._take()
        try:
            connection.sock.sendall(request)
            answer, will_close = _read_answer(connection.reader, method)
        except socket.timeout as error:
            connection.close()
            raise ServiceResponseTimeoutError(f"{method} {target}: no answer within {READ_SECONDS} s",
                                              error=error) from error
        except (OSError, Malformed) as error:
            connection.close()
            raise ServiceResponseError(f"{method} {target}: {error!r}", error=error) from error
        if will_close:
            connection.close()
        else:
            self._give_back(connection)
        return answer

    def _take(self) -> _Connection:
        now = time.monotonic()
        while True:
            with self._lock:   # held for the pop alone: the look at the socket is a system call
                connection, since = self._idle.pop() if self._idle else (None, 0.0)
            if connection is None:
                return self._connect()
            if now - since < IDLE_SECONDS and not _closed_by_server(connection):
                return connection
            connection.close()

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self._size:
                self._idle.append((connection, time.monotonic()))
                return
        connection.close()

    def _connect(self) -> _Connection:
        host, port = self._proxy or (self._host, self._port)
        try:
            sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._scheme == "https":
                    if self._proxy:
                        _tunnel(sock, f"{self._host}:{self._port}")
                    sock = self._context.wrap_socket(sock, server_hostname=self._host)
            except BaseException:
                sock.close()
                raise
        except socket.timeout as error:
            raise ServiceRequestTimeoutError(f"connecting to {host}:{port} timed out", error=error) from error
        except (OSError, Malformed) as error:
            raise ServiceRequestError(f"connecting to {host}:{port}: {error!r}", error=error) from error
        sock.settimeout(READ_SECONDS)
        return _Connection(sock)


def trusted_certificates() -> str:
    """The certificates a storage endpoint's must chain to: the file `REQUESTS_CA_BUNDLE`
    names (as `requests` reads it: a private CA, a local emulator's own), else certifi's."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()


def send_repeating(connections: Connections, method: str, target: str, body: bytes | None,
                   signed: Callable[[], dict[str, str]], repeatable: bool) -> Answer:
    """One request, sent again while storage answers busy (for up to BUSY_SECONDS of backing
    off) or its answer is lost, if it is `repeatable` (safe to apply twice); `signed()` gives
    each attempt its dated headers. Any request storage refused before carrying it out (503
    ServerBusy: Azure's throttling) is sent again. A request not repeatable whose answer is
    lost, or that storage may have carried out before failing (500 OperationTimedOut), raises
    ServiceResponseError: it may have been applied, and its caller settles it."""
    lost, waited = 0, 0.0
    for attempt in itertools.count():
        try:
            answer = connections.send(method, target, body, signed())
        except ServiceRequestError:   # never sent: always safe to send again
            lost += 1
            if lost == ATTEMPTS:
                raise
        except ServiceResponseError as error:
            lost += 1
            log.warning("storage answer lost (attempt %d%s): %s", lost,
                        ", sent again" if repeatable and lost < ATTEMPTS else "", error)
            if lost == ATTEMPTS or not repeatable:
                raise
        else:
            if answer.status not in BUSY:
                return answer
            if not repeatable and answer.status not in REFUSED:
                raise ServiceResponseError(f"{method} {target}: storage answered {answer.status} {answer.reason}")
            if waited >= BUSY_SECONDS:
                return answer
        delay = backoff(attempt)
        waited += delay
        time.sleep(delay)


def backoff(attempt: int) -> float:
    """Seconds to wait before attempt `attempt + 1`: from 50 ms, four times longer each time
    up to BACKOFF_CAP, each between half and one and a half of that, so that requests
    throttled together come back spread out instead of together."""
    return min(0.05 * 4 ** attempt, BACKOFF_CAP) * random.uniform(0.5, 1.5)


def _request(method: str, target: str, host: str, body: bytes | None, headers: dict[str, str]) -> bytes:
    """The request's bytes. A body (even an empty one) goes with its length; none, without."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    joined = "".join(lines)
    if "\r" in joined or "\n" in joined:   # it would end the line early: another request smuggled in
        raise ValueError(f"{method} {target[:200]}: a line break inside the request line or a header")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def _read_answer(reader, method: str) -> tuple[Answer, bool]:
    """The answer to the request just sent, read whole, and whether the server closes the
    connection after it. Interim (1xx) answers are passed over."""
    while True:
        version, status, reason = _status_line(reader)
        headers = _headers(reader)
        if not 100 <= status < 200:
            break
    connection = headers.get("connection", "").lower()
    will_close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
    if method == "HEAD" or status in (204, 304):
        return Answer(status, reason, headers, b""), will_close
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, reason, headers, _chunks(reader)), will_close
    length = headers.get("content-length")
    if length is None:   # the body runs to the end of the connection
        return Answer(status, reason, headers, reader.read()), True
    if not length.isdigit():
        raise Malformed(f"Content-Length {length[:40]!r}")
    return Answer(status, reason, headers, _exactly(reader, int(length))), will_close


def _status_line(reader) -> tuple[str, int, str]:
    line = reader.readline(MAX_LINE + 1)
    if not line:
        raise ConnectionResetError("the connection closed before an answer")
    version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
        raise Malformed(f"not an HTTP status line: {line[:80]!r}")
    return version, int(code), reason.strip()


def _headers(reader) -> Headers:
    headers = Headers()
    while True:
        line = reader.readline(MAX_LINE + 1)
        if line in (b"\r\n", b"\n"):
            return headers
        if not line.endswith(b"\n"):
            raise Malformed("the answer's headers were cut short") if line else ConnectionResetError(
                "the connection closed in the answer's headers")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise Malformed(f"not a header: {line[:80]!r}")
        key, value = name.strip().lower(), value.strip()
        dict.__setitem__(headers, key, f"{dict.get(headers, key)}, {value}" if key in headers else value)


def _chunks(reader) -> bytes:
    parts = []
    while True:
        size_line = reader.readline(MAX_LINE + 1)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Malformed(f"not a chunk size: {size_line[:40]!r}") from None
        if size == 0:
            _headers(reader)   # the trailer, up to its blank line
            return b"".join(parts)
        parts.append(_exactly(reader, size))
        if reader.readline(MAX_LINE + 1) not in (b"\r\n", b"\n"):
            raise Malformed("a chunk not followed by its line break")


def _exactly(reader, size: int) -> bytes:
    data = reader.read(size)
    if len(data) < size:
        raise ConnectionResetError(f"the answer was cut short: {len(data)} of {size} bytes")
    return data


def _tunnel(sock: socket.socket, authority: str) -> None:
    """Ask a proxy to connect `sock` through to `authority` (for TLS end to end)."""
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("latin-1"))
    reader = sock.makefile("rb")
    try:
        _, status, reason = _status_line(reader)
        _headers(reader)
    finally:
        reader.close()
    if status != 200:
        raise Malformed(f"the proxy refused to connect to {authority}: {status} {reason}")


def _closed_by_server(connection: _Connection) -> bool:
    """An idle connection with something to read has been closed by the server (or holds
    an answer nobody asked for): either way, not one to send on."""
    return wait_for_read(connection.sock, timeout=0)


def _proxy_for(scheme: str, host: str) -> tuple[str, int] | None:
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return parts.hostname, parts.port or 80
