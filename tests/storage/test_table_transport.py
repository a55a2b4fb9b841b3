"""The table clients' transport: answers as the pipeline reads them, and failures as the
azure-core errors the resend policy and the lost-answer checks tell apart."""

import socket
import threading

import pytest
from azure.core.exceptions import ServiceRequestError, ServiceResponseError
from azure.core.rest import HttpRequest

from shared.storage.table_transport import TableTransport
from devhost.processes import free_port


@pytest.fixture
def transport():
    return TableTransport(pool_size=4)


def serve_once(reply: bytes, received: list | None = None) -> int:
    """A port whose server reads one request (into `received`, if given) and sends `reply`
    (b'': closes without a word)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer():
        connection, _ = listener.accept()
        request = connection.recv(65536)
        if received is not None:
            received.append(request)
        if reply:
            connection.sendall(reply)
        connection.close()
        listener.close()
    threading.Thread(target=answer, daemon=True).start()
    return listener.getsockname()[1]


def test_an_answer_reaches_the_pipeline_whole(transport):
    body = b'{"value": 1}'
    port = serve_once(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nETag: W/\"1\"\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    response = transport.send(HttpRequest("POST", f"http://127.0.0.1:{port}/Rows", json={"RowKey": "a"}))
    assert response.status_code == 201 and response.reason == "Created"
    assert response.headers["etag"] == 'W/"1"' and response.content_type == "application/json"
    assert response.json() == {"value": 1} and response.text() == body.decode()


def test_a_request_without_a_body_says_so_as_requests_did(transport):
    received = []
    port = serve_once(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", received)
    response = transport.send(HttpRequest("DELETE", f"http://127.0.0.1:{port}/Rows(PartitionKey='p',RowKey='r')",
                                          headers={"If-Match": "*"}))
    assert response.status_code == 204
    head = received[0].decode().lower()
    assert "\r\ncontent-length: 0\r\n" in head and "\r\nif-match: *\r\n" in head


def test_a_connection_never_made_is_a_request_error(transport):
    with pytest.raises(ServiceRequestError) as raised:
        transport.send(HttpRequest("GET", f"http://127.0.0.1:{free_port()}/Rows"))
    assert not isinstance(raised.value, ServiceResponseError)


def test_a_connection_dropped_before_its_answer_is_a_response_error(transport):
    port = serve_once(b"")
    with pytest.raises(ServiceResponseError):   # the request may have landed: not resent blindly
        transport.send(HttpRequest("PATCH", f"http://127.0.0.1:{port}/Rows", content=b"{}"))


def test_an_answer_cut_short_is_a_response_error(transport):
    port = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\"")
    with pytest.raises(ServiceResponseError):
        transport.send(HttpRequest("GET", f"http://127.0.0.1:{port}/Rows"))
