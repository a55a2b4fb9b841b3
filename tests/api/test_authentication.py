"""Who is calling: every way a request's credentials can fail is a 401 AuthenticationFailed
(never the anonymous scopes instead), through the official client and real HTTP; bewits;
the public URL behind a front end; and no secret in a log line."""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import mohawk
import pytest
import requests
import taskcluster

from shared.config import Settings
from shared.domain.ids import new_slugid
from tests.conftest import ROOT_CREDENTIALS, free_port, make_task, start_server
from tests.signing import HawkAuth

from tests.api.conftest import AUTH_SETTINGS, CREDENTIALS, as_client, refusal, temporary


def assert_401(status_body: tuple[int, dict], reason: str) -> None:
    status, body = status_body
    assert (status, body["code"]) == (401, "AuthenticationFailed"), body
    assert reason in body["message"], body["message"]


def test_a_wrong_token_or_an_unknown_client_is_401_even_where_anonymous_callers_may_read(
        auth_server, task_queue_id):
    task_id = new_slugid()
    as_client(auth_server, "root").createTask(task_id, make_task(task_queue_id))
    wrong = {"clientId": ROOT_CREDENTIALS["clientId"], "accessToken": "not-the-token-" + "x" * 30}
    unknown = {"clientId": "static/stranger", "accessToken": "x" * 44}
    for credentials, reason in [(wrong, "Bad mac"), (unknown, "Client with clientId 'static/stranger' not found")]:
        client = as_client(auth_server, credentials)
        assert_401(refusal(client.createTask, new_slugid(), make_task(task_queue_id)), reason)
        assert_401(refusal(client.status, task_id), reason)   # not quietly anonymous
    response = requests.get(auth_server.url(f"/task/{task_id}/status"), auth=HawkAuth(wrong))
    assert response.status_code == 401 and response.headers["www-authenticate"] == "hawk"


def test_a_body_changed_after_signing_is_401_and_nothing_is_created(auth_server, task_queue_id):
    task_id = new_slugid()
    url = auth_server.url(f"/task/{task_id}")
    signed, sent = json.dumps(make_task(task_queue_id)), json.dumps(make_task(task_queue_id, priority="highest"))
    header = mohawk.Sender({"id": ROOT_CREDENTIALS["clientId"], "key": ROOT_CREDENTIALS["accessToken"],
                            "algorithm": "sha256"}, url, "PUT", content=signed.encode(),
                           content_type="application/json").request_header
    response = requests.put(url, data=sent, headers={"Authorization": header, "Content-Type": "application/json"})
    assert_401((response.status_code, response.json()), "Invalid payload hash")
    assert requests.put(url, data=signed, headers={"Authorization": header,
                                                   "Content-Type": "application/json"}).status_code == 200
    assert as_client(auth_server, None).task(task_id)["priority"] == "lowest"


def test_a_timestamp_16_minutes_off_is_401_and_14_minutes_is_accepted(auth_server):
    url = auth_server.url("/task-queues")
    for minutes, status in [(-16, 401), (16, 401), (-14, 200), (14, 200)]:
        auth = HawkAuth(ROOT_CREDENTIALS, timestamp=int(time.time()) + minutes * 60)
        response = requests.get(url, auth=auth)
        assert response.status_code == status, (minutes, response.text[:300])
        if status == 401:
            assert "Stale timestamp" in response.json()["message"]


def test_a_bewit_signs_a_get_until_it_expires(auth_server):
    root = as_client(auth_server, "root")
    url = root.buildSignedUrl("listTaskQueues", expiration=60)
    assert requests.get(url).status_code == 200
    assert requests.get(url.split("?")[0]).status_code == 403          # the same URL unsigned
    expired = requests.get(root.buildSignedUrl("listTaskQueues", expiration=-1))
    assert_401((expired.status_code, expired.json()), "Access expired")
    tampered = requests.get(url.replace("/task-queues", "/task-queues/prov%2Fwt"))
    assert tampered.status_code == 401
    nobody = as_client(auth_server, "nobody").buildSignedUrl("listTaskQueues")
    assert requests.get(nobody).status_code == 403                      # a bewit carries its client's scopes


def test_temporary_credentials_claiming_scopes_the_issuer_lacks_are_401(auth_server, task_queue_id):
    task_id = new_slugid()
    as_client(auth_server, "root").createTask(task_id, make_task(task_queue_id))
    fine = temporary("limited", ["queue:get-task:*"], name="limited/reader")
    assert as_client(auth_server, fine).task(task_id)["taskQueueId"] == task_queue_id
    greedy = temporary("limited", ["queue:get-task:*", "queue:create-task:*"], name="limited/greedy")
    assert_401(refusal(as_client(auth_server, greedy).task, task_id), "doesn't satisfy all certificate scopes")
    misnamed = temporary("limited", ["queue:get-task:*"], name="someone-else")
    assert_401(refusal(as_client(auth_server, misnamed).task, task_id), "auth:create-client:someone-else")
    forged = {**fine, "clientId": "limited/other"}
    assert_401(refusal(as_client(auth_server, forged).task, task_id), "signature is not valid")


def test_authorized_scopes_narrow_a_request_and_cannot_widen_it(auth_server, task_queue_id):
    narrowed = as_client(auth_server, "root", authorizedScopes=["queue:list-task-queues"])
    assert "taskQueues" in narrowed.listTaskQueues()
    status, body = refusal(narrowed.createTask, new_slugid(), make_task(task_queue_id))
    assert (status, body["code"]) == (403, "InsufficientScopes")
    assert "queue:list-task-queues" in body["message"]                # the scopes it had
    widened = as_client(auth_server, "nobody", authorizedScopes=["queue:list-task-queues"])
    assert_401(refusal(widened.listTaskQueues), "do not satisfy authorizedScopes")


class _Proxy(BaseHTTPRequestHandler):
    """A front end: forwards each request to the backend, saying where it came in (or not)."""

    protocol_version = "HTTP/1.1"
    backend: tuple[str, int]
    forwards_headers = True

    def log_message(self, *args) -> None:
        pass

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {key: value for key, value in self.headers.items() if key.lower() != "host"}
        if self.forwards_headers:
            headers.update({"X-Forwarded-Host": self.headers["Host"], "X-Forwarded-Proto": "http",
                            "X-Forwarded-Port": str(self.server.server_address[1])})
        connection = http.client.HTTPConnection(*self.backend, timeout=30)
        connection.request(self.command, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        payload = answer.read()
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _forward


@pytest.mark.parametrize("forwards_headers", [True, False])
def test_behind_a_front_end_the_url_the_client_called_is_what_it_signed(auth_server, task_queue_id,
                                                                       forwards_headers):
    backend = auth_server.root_url.removeprefix("http://").split(":")
    handler = type("Proxy", (_Proxy,), {"backend": (backend[0], int(backend[1])),
                                         "forwards_headers": forwards_headers})
    proxy = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        client = taskcluster.Queue({"rootUrl": f"http://127.0.0.1:{proxy.server_address[1]}", "maxRetries": 0,
                                    "credentials": dict(ROOT_CREDENTIALS)})
        if forwards_headers:
            assert client.createTask(new_slugid(), make_task(task_queue_id))["status"]["state"] == "pending"
        else:   # the backend sees its own host and port, not the ones the client signed
            assert_401(refusal(client.createTask, new_slugid(), make_task(task_queue_id)), "Bad mac")
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_with_a_public_url_set_requests_are_checked_against_it_alone(azurite, tmp_path, task_queue_id):
    server = start_server(azurite, tmp_path, QUEUE_PUBLIC_URL="https://queue.example.com")
    try:
        # Signed for the address the host listens on: not the URL clients are told to use.
        assert_401(refusal(server.client().createTask, new_slugid(), make_task(task_queue_id)), "Bad mac")
        public = HawkAuth(ROOT_CREDENTIALS, origin="https://queue.example.com")
        response = requests.put(server.url(f"/task/{new_slugid()}"), json=make_task(task_queue_id), auth=public)
        assert response.status_code == 200, response.text[:300]
        # Forwarded headers cannot move it elsewhere.
        moved = requests.get(server.url("/task-queues"), auth=HawkAuth(ROOT_CREDENTIALS),
                             headers={"X-Forwarded-Host": server.root_url.removeprefix("http://")})
        assert moved.status_code == 401
        signed = taskcluster.Queue({"rootUrl": "https://queue.example.com", "credentials": dict(ROOT_CREDENTIALS)}) \
            .buildSignedUrl("listTaskQueues")
        assert requests.get(signed.replace("https://queue.example.com", server.root_url)).status_code == 200
    finally:
        server.stop()


def test_no_secret_reaches_a_log_line_or_an_error(auth_server, task_queue_id, monkeypatch):
    """Every kind of request, good and bad, then the host's whole log is searched for every
    token, temporary key and bewit of the session (the other tests' calls included)."""
    root, secrets_seen = as_client(auth_server, "root"), []
    task_id = new_slugid()
    root.createTask(task_id, make_task(task_queue_id, scopes=["queue:list-task-queues"]))
    claim = as_client(auth_server, "worker").claimWork(task_queue_id, {"workerGroup": "workers", "workerId": "w1",
                                                                        "tasks": 1})["tasks"][0]
    worker = as_client(auth_server, claim["credentials"])
    worker.listTaskQueues()
    reclaimed = worker.reclaimTask(task_id, "0")
    secrets_seen += [claim["credentials"]["accessToken"], reclaimed["credentials"]["accessToken"]]
    bewit = root.buildSignedUrl("listTaskQueues")
    secrets_seen.append(bewit.split("bewit=")[1])
    requests.get(bewit)
    errors = [refusal(as_client(auth_server, {**ROOT_CREDENTIALS, "accessToken": "y" * 44}).listTaskQueues),
              refusal(as_client(auth_server, "nobody").createTask, new_slugid(), make_task(task_queue_id)),
              refusal(as_client(auth_server, reclaimed["credentials"]).reportCompleted, task_id, "1")]
    as_client(auth_server, reclaimed["credentials"]).reportCompleted(task_id, "0")
    errors.append(refusal(worker.reportCompleted, task_id, "0"))
    secrets_seen += [credentials["accessToken"] for credentials in CREDENTIALS.values()]
    for name, value in AUTH_SETTINGS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("QUEUE_CREDENTIALS_ACCESS_TOKEN", raising=False)
    secrets_seen.append(Settings.from_environ().credentials_access_token)   # the claims' issuer's

    log = auth_server.log_path.read_text()
    assert "-> 401" in log and "-> 403" in log and "claim" in log      # the calls above were logged
    answers = json.dumps([body for _, body in errors])
    for secret in secrets_seen:
        assert secret and secret not in log, "a secret in the host's log"
        assert secret not in answers, "a secret in an error"


@pytest.mark.parametrize("headers", [
    {"Host": "[::1", "Authorization": 'Hawk id="static/tests-root", ts="1", nonce="n", mac="m"'},
    {"Host": "queue:99999999999", "X-Forwarded-Port": "x", "Authorization": "Hawk " + "x" * 5000},
    {"Authorization": 'Hawk id="static/tests-root", ts="' + "9" * 5000 + '", nonce="n", mac="m"'},
    {"Authorization": "Hawk id=\"\u00e9\", ts=\"1\", nonce=\"n\", mac=\"m\""},
])
def test_odd_headers_are_a_401_never_a_500(auth_server, headers):
    host, port = auth_server.root_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest("GET", "/api/queue/v1/task-queues", skip_host="Host" in headers)
    for name, value in headers.items():
        connection.putheader(name, value.encode("latin-1"))
    connection.endheaders()
    answer = connection.getresponse()
    assert answer.status == 401 and json.loads(answer.read())["code"] == "AuthenticationFailed"
