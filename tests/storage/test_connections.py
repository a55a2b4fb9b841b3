"""The table client's connections: answers read whole, connections kept and dropped as they
should be, and failures as the azure-core errors the table client and the lost-answer checks
tell apart."""

import socket
import threading
import time

import pytest
from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from devhost.processes import free_port
from shared.storage import connections as connections_module
from shared.storage.connections import Connections


def serve(replies: list[bytes], received: list | None = None, keep_open: bool = True) -> tuple[int, list]:
    """A port whose server answers the requests of each connection with the next of
    `replies` (b'': closes without a word); returns the port and the list of accepted
    connections' numbers, one per request, so a test sees which connection carried it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    carried: list[int] = []
    pending = list(replies)

    def on_connection(connection, number):
        while pending:
            request = connection.recv(65536)
            if not request:
                break
            if received is not None:
                received.append(request)
            carried.append(number)
            reply = pending.pop(0)
            if not reply:
                break
            connection.sendall(reply)
            if not keep_open:
                break
        connection.close()

    def accept():
        number = 0
        while pending:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            number += 1
            threading.Thread(target=on_connection, args=(connection, number), daemon=True).start()
        listener.close()
    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], carried


def ok(body: bytes = b"", status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def test_an_answer_is_read_whole_with_its_headers():
    port, _ = serve([ok(b'{"value": 1}', "201 Created", 'ETag: W/"1"\r\n')])
    answer = Connections("http", "127.0.0.1", port, 4).send("POST", "/Rows", b'{"RowKey": "a"}', {})
    assert (answer.status, answer.reason) == (201, "Created")
    assert answer.headers.get("etag") == 'W/"1"' and answer.data == b'{"value": 1}'


def test_a_connection_is_kept_for_the_next_request():
    port, carried = serve([ok(), ok(), ok()])
    pool = Connections("http", "127.0.0.1", port, 4)
    for _ in range(3):
        assert pool.send("GET", "/Rows", None, {}).status == 200
    assert carried == [1, 1, 1]


def test_a_connection_the_server_closed_while_idle_is_not_used(monkeypatch):
    port, carried = serve([ok(), ok()], keep_open=False)
    pool = Connections("http", "127.0.0.1", port, 4)
    pool.send("GET", "/Rows", None, {})
    time.sleep(0.2)   # the server has closed it meanwhile
    assert pool.send("PATCH", "/Rows", b"{}", {}).status == 200   # not a lost answer: a new connection
    assert carried == [1, 2]


def test_a_connection_idle_too_long_is_not_used(monkeypatch):
    port, carried = serve([ok(), ok()])
    pool = Connections("http", "127.0.0.1", port, 4)
    pool.send("GET", "/Rows", None, {})
    monkeypatch.setattr(connections_module, "IDLE_SECONDS", 0.0)
    pool.send("GET", "/Rows", None, {})
    assert carried == [1, 2]


def test_a_connection_never_made_is_a_request_error():
    with pytest.raises(ServiceRequestError):
        Connections("http", "127.0.0.1", free_port(), 4).send("GET", "/Rows", None, {})


def test_a_connection_dropped_before_its_answer_is_a_response_error():
    port, _ = serve([b""])
    with pytest.raises(ServiceResponseError):   # the request may have landed: not resent blindly
        Connections("http", "127.0.0.1", port, 4).send("PATCH", "/Rows", b"{}", {})


def test_an_answer_cut_short_is_a_response_error():
    port, _ = serve([b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\""], keep_open=False)
    with pytest.raises(ServiceResponseError):
        Connections("http", "127.0.0.1", port, 4).send("GET", "/Rows", None, {})
