"""The table client's connections: answers read whole, connections kept and dropped as they
should be, and failures as the azure-core errors the table client and the lost-answer checks
tell apart."""

import socket
import threading
import time

import pytest
from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from devhost.processes import free_port
from shared.storage.client import connections as connections_module
from shared.storage.client.connections import Connections


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


def test_a_chunked_answer_is_read_whole_and_the_connection_kept():
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\n{\"a\":\r\n3;ext=1\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n")
    port, carried = serve([chunked, ok(b"{}")])
    pool = Connections("http", "127.0.0.1", port, 4)
    assert pool.send("GET", "/Rows", None, {}).data == b'{"a": 1}'
    assert pool.send("GET", "/Rows", None, {}).data == b"{}"
    assert carried == [1, 1]


def test_headers_are_found_by_any_case_and_a_repeated_one_keeps_every_value():
    port, _ = serve([b"HTTP/1.1 204 No Content\r\nX-Ms-Error-Code: Gone\r\nVia: a\r\nVia: b\r\n\r\n"])
    answer = Connections("http", "127.0.0.1", port, 4).send("DELETE", "/Rows", b"", {})
    assert (answer.status, answer.data) == (204, b"")
    assert answer.headers.get("x-ms-error-code") == answer.headers["X-MS-ERROR-CODE"] == "Gone"
    assert answer.headers.get("via") == "a, b" and "VIA" in answer.headers and answer.headers.get("etag") is None


def test_an_interim_answer_is_passed_over():
    port, _ = serve([b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"[]", "201 Created")])
    assert Connections("http", "127.0.0.1", port, 4).send("POST", "/Rows", b"{}", {}).status == 201


def test_an_answer_without_a_length_runs_to_the_close_and_the_connection_is_not_kept():
    port, carried = serve([b"HTTP/1.1 200 OK\r\n\r\n{\"until\": \"close\"}", ok()], keep_open=False)
    pool = Connections("http", "127.0.0.1", port, 4)
    assert pool.send("GET", "/Rows", None, {}).data == b'{"until": "close"}'
    assert pool.send("GET", "/Rows", None, {}).status == 200
    assert carried == [1, 2]


def test_a_connection_the_server_says_it_closes_is_not_kept():
    port, carried = serve([ok(extra="Connection: close\r\n"), ok()], keep_open=False)
    pool = Connections("http", "127.0.0.1", port, 4)
    pool.send("GET", "/Rows", None, {})
    pool.send("GET", "/Rows", None, {})
    assert carried == [1, 2]


@pytest.mark.parametrize("reply", [b"SMTP ready\r\n\r\n", b"HTTP/1.1 2OO OK\r\n\r\n",
                                   b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
                                   b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"])
def test_an_answer_that_is_not_http_is_a_response_error(reply):
    port, _ = serve([reply], keep_open=False)
    with pytest.raises(ServiceResponseError):
        Connections("http", "127.0.0.1", port, 4).send("GET", "/Rows", None, {})


def test_a_request_is_sent_as_framed_and_a_line_break_in_a_header_sends_nothing():
    received = []
    port, carried = serve([ok()], received)
    pool = Connections("http", "127.0.0.1", port, 4)
    with pytest.raises(ValueError):
        pool.send("GET", "/Rows", None, {"If-Match": "*\r\nX-Smuggled: 1"})
    pool.send("PATCH", "/Rows('a')", b'{"b": 1}', {"If-Match": "*"})
    head, body = received[0].split(b"\r\n\r\n", 1)
    assert head.split(b"\r\n")[0] == b"PATCH /Rows('a') HTTP/1.1" and body == b'{"b": 1}'
    assert {b"Host: 127.0.0.1:%d" % port, b"If-Match: *", b"Content-Length: 8"} <= set(head.split(b"\r\n"))
    assert carried == [1]
