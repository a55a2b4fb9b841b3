"""Kept-alive HTTP connections to one storage endpoint, shared by the threads of a process.

A request takes the connection used last (the likeliest still open), sends, reads the whole
answer and gives the connection back. A connection idle longer than the server keeps it
(Azurite, like any Node server, closes after 5 s), or one the server has closed since, is
dropped before use rather than failing a request: a write sent on a connection closed under
it would come back as a lost answer, which costs a read to settle.

Failures map to azure-core's errors, which the callers tell apart: a connection that could
not be made is a `ServiceRequestError` (nothing was sent), one that failed after the request
went out a `ServiceResponseError` (the request may have landed).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections import deque
from dataclasses import dataclass

import certifi
from urllib3.util.wait import wait_for_read
from azure.core.exceptions import (ServiceRequestError, ServiceRequestTimeoutError, ServiceResponseError,
                                   ServiceResponseTimeoutError)

CONNECT_SECONDS = 20.0
READ_SECONDS = 120.0    # a query page or a 100-row transaction; Azure's own limit per operation is 30 s
IDLE_SECONDS = 4.0      # under Node's keep-alive of 5 s; Azure's front end keeps them for minutes


@dataclass
class Answer:
    status: int
    reason: str
    headers: http.client.HTTPMessage
    data: bytes


class Connections:
    """A pool of connections to `scheme://host:port`, through the proxy configured for it if any."""

    def __init__(self, scheme: str, host: str, port: int, size: int) -> None:
        self._scheme, self._host, self._port, self._size = scheme, host, port, size
        self._idle: deque[tuple[http.client.HTTPConnection, float]] = deque()
        self._lock = threading.Lock()
        self._context = ssl.create_default_context(cafile=certifi.where()) if scheme == "https" else None
        self._proxy = _proxy_for(scheme, host)

    def send(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> Answer:
        """Send one request for `target` (path and query) and read its whole answer."""
        connection = self._take()
        if self._proxy and self._scheme == "http":
            target = f"http://{self._host}:{self._port}{target}"   # a plain proxy forwards absolute URLs
        try:
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            answer = Answer(response.status, response.reason, response.headers, response.read())
        except socket.timeout as error:
            connection.close()
            raise ServiceResponseTimeoutError(f"{method} {target}: no answer within {READ_SECONDS} s",
                                              error=error) from error
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise ServiceResponseError(f"{method} {target}: {error!r}", error=error) from error
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return answer

    def _take(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                connection, since = self._idle.pop()
                if now - since < IDLE_SECONDS and not _closed_by_server(connection):
                    return connection
                connection.close()
        return self._connect()

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._size:
                self._idle.append((connection, time.monotonic()))
                return
        connection.close()

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self._proxy or (self._host, self._port)
        if self._scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=CONNECT_SECONDS, context=self._context)
            if self._proxy:
                connection.set_tunnel(self._host, self._port)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=CONNECT_SECONDS)
        try:
            connection.connect()
        except socket.timeout as error:
            raise ServiceRequestTimeoutError(f"connecting to {host}:{port} timed out", error=error) from error
        except OSError as error:
            raise ServiceRequestError(f"connecting to {host}:{port}: {error!r}", error=error) from error
        connection.sock.settimeout(READ_SECONDS)
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection


def _closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """An idle connection with something to read has been closed by the server (or holds
    an answer nobody asked for): either way, not one to send on."""
    if connection.sock is None:
        return True
    return wait_for_read(connection.sock, timeout=0)


def _proxy_for(scheme: str, host: str) -> tuple[str, int] | None:
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return parts.hostname, parts.port or 80
