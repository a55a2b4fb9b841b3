"""Hawk headers and bewits, made by `mohawk` and by the official client, verified here."""

import json
import time
from datetime import datetime, timedelta, timezone

import mohawk
import pytest
import taskcluster
from mohawk.base import Resource
from mohawk.util import calculate_mac

from shared.auth.clients import Realm
from shared.auth.errors import AuthenticationFailed
from shared.auth.hawk import SignedRequest, authenticate

TOKEN = "a-static-client-token-long-enough"
CLIENTS = [{"clientId": "static/root", "accessToken": TOKEN, "scopes": ["*"]},
           {"clientId": "static/reader", "accessToken": TOKEN + "-reader", "scopes": ["queue:list-task-queues"]}]
REALM = Realm.from_settings(json.dumps(CLIENTS), "", "")
ROOT_URL = "https://queue.example.com"
PATH = "/api/queue/v1/claim-work/proj%2Flinux"


def signed(path: str = PATH, body: bytes = b'{"tasks": 1}', client_id: str = "static/root", token: str = TOKEN,
           method: str = "POST", ts: int | None = None, ext=None, url: str = ROOT_URL) -> str:
    return mohawk.Sender({"id": client_id, "key": token, "algorithm": "sha256"}, url + path, method,
                         content=body, content_type="application/json", _timestamp=ts, ext=ext).request_header


def received(header: str | None, path: str = PATH, body: bytes = b'{"tasks": 1}', method: str = "POST",
             host: str = "queue.example.com", port: int = 443) -> SignedRequest:
    return SignedRequest(method, path, host, port, header, body, "application/json; charset=utf-8")


def test_a_signed_request_names_its_client_and_an_unsigned_one_is_anonymous():
    caller = authenticate(received(signed()), REALM)
    assert caller.client_id == "static/root" and caller.scheme == "hawk" and caller.scopes.has("x")
    assert authenticate(received(None), REALM) is REALM.anonymous


# Each request is made when its test runs (a timestamp made at collection would age).
@pytest.mark.parametrize("make, reason", [
    (lambda: received(signed(), path="/api/queue/v1/claim-work/proj/linux"), "Bad mac"),   # %2F decoded
    (lambda: received(signed(), host="queue.example.org"), "Bad mac"),
    (lambda: received(signed(), port=8443), "Bad mac"),
    (lambda: received(signed(), method="PUT"), "Bad mac"),
    (lambda: received(signed(token="wrong-token-of-the-same-size-xxx")), "Bad mac"),
    (lambda: received(signed(), body=b'{"tasks": 2}'), "Invalid payload hash"),
    (lambda: received(signed(client_id="static/nobody")), "'static/nobody' not found"),
    (lambda: received(signed(ts=int(time.time()) - 16 * 60)), "Stale timestamp"),
    (lambda: received(signed(ts=int(time.time()) + 16 * 60)), "Stale timestamp"),
    (lambda: received("Basic dXNlcjpwYXNz"), "Invalid Authorization header"),
    (lambda: received('Hawk ts="1", nonce="x", mac="y"'), "Invalid Authorization header"),
    (lambda: received(signed() + ', junk'), "Invalid Authorization header"),
    (lambda: received(signed(ext="bm90IGpzb24")), "Failed to parse ext"),
    (lambda: received(signed() + ', id="static/root"'), "Invalid Authorization header"),   # twice
    (lambda: received(signed() + ', color="red"'), "Invalid Authorization header"),        # not Hawk's
    (lambda: received(signed().replace('id="static/root"', 'id="static\u00e9root"')),
     "Invalid Authorization header"),                                                     # not Hawk's characters
    (lambda: received(signed(ext="x" * 4100)), "Invalid Authorization header"),           # longer than Hawk allows
    (lambda: received(signed().replace('ts="', 'ts="x')), "Invalid Hawk authorization"),
])
def test_anything_changed_after_signing_is_refused(make, reason):
    with pytest.raises(AuthenticationFailed, match=reason) as refused:
        authenticate(make(), REALM)
    assert TOKEN not in refused.value.message


def test_the_refusal_never_shows_the_mac_the_server_computed():
    header = signed(token="wrong-token-of-the-same-size-xxx")
    attributes = mohawk.util.parse_authorization_header(header)
    resource = Resource(url="http://queue.example.com:443" + PATH, method="POST", content=b'{"tasks": 1}',
                        content_type="application/json", credentials={"id": "static/root", "key": TOKEN,
                                                                      "algorithm": "sha256"},
                        timestamp=attributes["ts"], nonce=attributes["nonce"])
    expected = calculate_mac("header", resource, resource.gen_content_hash()).decode()
    with pytest.raises(AuthenticationFailed) as refused:
        authenticate(received(header), REALM)
    assert expected not in refused.value.message


def test_fourteen_minutes_of_skew_are_accepted_and_a_hash_is_optional():
    assert authenticate(received(signed(ts=int(time.time()) - 14 * 60)), REALM).client_id == "static/root"
    unhashed = mohawk.Sender({"id": "static/root", "key": TOKEN, "algorithm": "sha256"}, ROOT_URL + PATH, "POST",
                             always_hash_content=False).request_header
    assert authenticate(received(unhashed), REALM).client_id == "static/root"   # as Taskcluster allows


def test_temporary_credentials_in_a_header_carry_the_certificates_scopes():
    now = datetime.now(timezone.utc)
    made = taskcluster.createTemporaryCredentials("static/root", TOKEN, now, now + timedelta(hours=1),
                                                  ["queue:claim-work:proj/linux"], name="worker/w1")
    client = taskcluster.Queue({"rootUrl": ROOT_URL, "credentials": made})
    header = signed(client_id="worker/w1", token=made["accessToken"].decode(), ext=client.makeHawkExt())
    caller = authenticate(received(header), REALM)
    assert caller.client_id == "worker/w1" and caller.scopes.has("queue:claim-work:proj/linux")
    assert not caller.scopes.has("queue:claim-work:proj/other") and caller.scopes.has("queue:status:abc")


def bewit_request(url: str, method: str = "GET", header: str | None = None) -> SignedRequest:
    resource = url.removeprefix(ROOT_URL)
    return SignedRequest(method, resource, "queue.example.com", 443, header, b"", "")


def official_client(**credentials) -> taskcluster.Queue:
    return taskcluster.Queue({"rootUrl": ROOT_URL, "credentials": credentials or
                              {"clientId": "static/reader", "accessToken": TOKEN + "-reader"}})


def test_a_bewit_from_build_signed_url_signs_that_get_until_it_expires():
    url = official_client().buildSignedUrl("listTaskQueues", query={"limit": "5"}, expiration=60)
    caller = authenticate(bewit_request(url), REALM)
    assert caller.client_id == "static/reader" and caller.scheme == "bewit"
    assert caller.scopes.has("queue:list-task-queues") and not caller.scopes.has("queue:create-task:x")
    expired = official_client().buildSignedUrl("listTaskQueues", expiration=-1)
    for request_, reason in [(bewit_request(expired), "Access expired"),
                             (bewit_request(url.replace("limit=5", "limit=6")), "Bad mac"),
                             (bewit_request(url, method="POST"), "GET requests only"),
                             (bewit_request(url, header=signed()), "two authentication schemes"),
                             (bewit_request(url.replace("bewit=", "bewit=%%")), "Invalid bewit"),
                             (bewit_request(official_client(clientId="static/reader", accessToken="x" * 30)
                                            .buildSignedUrl("listTaskQueues")), "Bad mac")]:
        with pytest.raises(AuthenticationFailed, match=reason):
            authenticate(request_, REALM)


@pytest.mark.parametrize("path, received_as", [
    ("/api/queue/v1/task/abc/artifacts/public%2Fa;b.txt?x=1", None),
    ("/api/queue/v1/task-queues?", "/api/queue/v1/task-queues?"),      # an empty query's "?"
    ("/api/queue/v1/task-queues?limit=5&continuationToken=a%3Db", None),
])
def test_paths_and_queries_are_read_as_the_python_client_signs_them(path, received_as):
    header = signed(path=path, method="GET", body=b"")
    assert authenticate(received(header, path=received_as or path, method="GET", body=b""), REALM).client_id == \
        "static/root"


def test_app_and_dlg_are_signed_too():
    def with_app(dlg: str) -> str:
        return mohawk.Sender({"id": "static/root", "key": TOKEN, "algorithm": "sha256"}, ROOT_URL + PATH, "POST",
                             content=b'{"tasks": 1}', content_type="application/json", app="an-app",
                             dlg=dlg).request_header
    assert authenticate(received(with_app("a-delegate")), REALM).client_id == "static/root"
    forged = with_app("a-delegate").replace('dlg="a-delegate"', 'dlg="another"')
    with pytest.raises(AuthenticationFailed, match="Bad mac"):
        authenticate(received(forged), REALM)
