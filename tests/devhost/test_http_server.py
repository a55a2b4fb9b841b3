"""HTTP triggers served through the real threaded server, from a small FunctionApp built here."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import azure.functions as func
import pytest
import requests


def describe(name: str, req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse(json.dumps({
        "function": name, "method": req.method, "route": dict(req.route_params),
        "params": dict(req.params), "body": req.get_body().decode(),
    }), mimetype="application/json")


TOGETHER = threading.Barrier(12)


def build_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    # Registered before the literal route below: precedence, not order, must pick `items/new`.
    @app.route(route="items/{id}", methods=["GET", "POST"])
    def item(req: func.HttpRequest) -> func.HttpResponse:
        return describe("item", req)

    @app.route(route="items/new", methods=["GET"])
    def new_item(req: func.HttpRequest) -> func.HttpResponse:
        return describe("new_item", req)

    @app.route(route="echo/{*rest}")  # every method
    async def echo(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(req.get_body(), status_code=201, headers={"X-Rest": req.route_params["rest"]})

    # Answers once `TOGETHER` requests are inside it at the same time (500 after 10 s).
    @app.route(route="together")
    def together(req: func.HttpRequest) -> func.HttpResponse:
        TOGETHER.wait(timeout=10)
        return func.HttpResponse("met")

    @app.route(route="thread")
    def thread(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse(str(threading.get_native_id()))

    @app.route(route="boom")
    def boom(req: func.HttpRequest) -> func.HttpResponse:
        raise RuntimeError("the function fails")

    return app


@pytest.fixture
def base_url(local_host) -> str:
    return local_host(build_app(), {"http": {"routePrefix": "api"}}).base_url


def test_literal_route_wins_over_a_parameter_registered_first(base_url):
    assert requests.get(f"{base_url}/api/items/new", timeout=5).json()["function"] == "new_item"
    assert requests.get(f"{base_url}/api/items/7", timeout=5).json()["route"] == {"id": "7"}


def test_encoded_slash_reaches_the_function_inside_one_route_value(base_url):
    answer = requests.get(f"{base_url}/api/items/proj%2Flinux", timeout=5).json()
    assert answer["function"] == "item"
    assert answer["route"] == {"id": "proj%2Flinux"}


def test_query_parameters_including_empty_ones(base_url):
    answer = requests.get(f"{base_url}/api/items/7?limit=10&continuationToken=", timeout=5).json()
    assert answer["params"] == {"limit": "10", "continuationToken": ""}


def test_methods_select_the_function_and_others_are_not_found(base_url):
    answer = requests.post(f"{base_url}/api/items/7", json={"a": 1}, timeout=5).json()
    assert (answer["function"], answer["method"], json.loads(answer["body"])) == ("item", "POST", {"a": 1})
    # `items/new` takes GET only, so a POST falls through to `items/{id}`.
    assert requests.post(f"{base_url}/api/items/new", timeout=5).json()["function"] == "item"
    # No function takes DELETE on items/7: the host answers 404.
    assert requests.delete(f"{base_url}/api/items/7", timeout=5).status_code == 404


def test_async_function_status_headers_and_route_prefix(base_url):
    response = requests.put(f"{base_url}/api/echo/a/b%2Fc", data=b"payload", timeout=5)
    assert response.status_code == 201
    assert response.content == b"payload"
    assert response.headers["X-Rest"] == "a/b%2Fc"
    # Only under the routePrefix from host.json.
    assert requests.get(f"{base_url}/echo/a", timeout=5).status_code == 404


def test_chunked_body_is_read_whole_and_the_connection_stays_usable(base_url):
    with requests.Session() as session:  # one keep-alive connection for both requests
        response = session.post(f"{base_url}/api/echo/x", data=iter([b"ab", b"cd", b"ef"]), timeout=5)
        assert (response.status_code, response.content) == (201, b"abcdef")
        assert session.get(f"{base_url}/api/items/new", timeout=5).json()["function"] == "new_item"


def test_a_failing_function_is_a_500_and_the_server_keeps_serving(base_url):
    response = requests.get(f"{base_url}/api/boom", timeout=5)
    assert response.status_code == 500
    assert response.json()["code"] == "InternalServerError"
    assert requests.get(f"{base_url}/api/items/new", timeout=5).status_code == 200


def test_empty_route_prefix_serves_from_the_root(local_host):
    base_url = local_host(build_app(), {"http": {"routePrefix": ""}}).base_url
    assert requests.get(f"{base_url}/items/new", timeout=5).json()["function"] == "new_item"


@pytest.mark.parametrize("head", [
    "POST /api/echo/x HTTP/1.1\r\nContent-Length: abc\r\n",
    "POST /api/echo/x HTTP/1.1\r\nContent-Length: -5\r\n",
    "POST /api/echo/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "GET http://[x/api/echo/x HTTP/1.1\r\n",
])
def test_a_request_that_cannot_be_framed_is_answered_400_not_dropped(base_url, head):
    import socket
    from urllib.parse import urlsplit

    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall((head if head.endswith("zz\r\n") else head + "\r\n").encode())
        answer = connection.recv(4096).decode(errors="replace")
    assert answer.startswith("HTTP/1.") and " 400 " in answer.split("\r\n", 1)[0], answer[:200]
    assert requests.get(f"{base_url}/api/items/new").status_code == 200   # still serving


def _connection_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "http-connection"]


def test_overlapping_requests_each_get_a_thread(base_url):
    # A long-polling claimWork holds its thread: the pool grows while all are busy.
    TOGETHER.reset()
    with ThreadPoolExecutor(TOGETHER.parties) as callers:
        answers = list(callers.map(lambda _: requests.get(f"{base_url}/api/together", timeout=20),
                                   range(TOGETHER.parties)))
    assert [(answer.status_code, answer.text) for answer in answers] == [(200, "met")] * TOGETHER.parties


def test_connections_one_after_another_reuse_the_waiting_threads(base_url):
    # A new connection each, as the official client makes: served by the threads that
    # served the ones before, not a thread started for each.
    served_by = {requests.get(f"{base_url}/api/thread", timeout=5).text for _ in range(40)}
    assert len(served_by) <= 3


def test_a_stopped_server_lets_its_threads_go(local_host):
    host = local_host(build_app())
    for _ in range(3):
        requests.get(f"{host.base_url}/items/new", timeout=5)
    host.stop()
    for thread in _connection_threads():
        thread.join(timeout=5)
    assert _connection_threads() == []
