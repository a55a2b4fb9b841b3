"""Temporary credentials made by Taskcluster's own client library, checked as Taskcluster's
auth service checks them; `authorizedScopes`."""

import base64
import json
from datetime import datetime, timedelta, timezone

import pytest
import taskcluster

from shared.auth.certificates import apply_ext, issuer_of, parse_ext
from shared.auth.errors import AuthenticationFailed
from shared.auth.scopes import ScopeSet

ISSUER, TOKEN = "static/issuer", "issuer-access-token-of-enough-length"
ISSUER_SCOPES = ScopeSet(["queue:*", "auth:create-client:task-client/*"])


def temporary(scopes, name=None, start=None, expiry=None, token=TOKEN) -> tuple[str, dict]:
    now = datetime.now(timezone.utc)
    made = taskcluster.createTemporaryCredentials(ISSUER, token, start or now, expiry or now + timedelta(hours=1),
                                                  scopes, name=name)
    return made["clientId"], {"certificate": json.loads(made["certificate"]), "accessToken": made["accessToken"]}


def check(client_id: str, ext: dict, issuer_scopes: ScopeSet = ISSUER_SCOPES):
    return apply_ext(client_id, issuer_of(client_id, ext), TOKEN, issuer_scopes, ext, ScopeSet)


def test_named_and_unnamed_credentials_give_their_key_and_scopes():
    for name in ("task-client/abc", None):
        client_id, made = temporary(["queue:resolve-task:abc/0"], name=name)
        token = made.pop("accessToken")
        limited = check(client_id, made)
        assert limited.key == token.decode() and limited.scopes == ("queue:resolve-task:abc/0",)


@pytest.mark.parametrize("change, reason", [
    (lambda cert: cert.update(scopes=cert["scopes"] + ["queue:extra"]), "signature is not valid"),
    (lambda cert: cert.update(expiry=cert["expiry"] + 1000), "signature is not valid"),
    (lambda cert: cert.update(version=2), "version must be 1"),
    (lambda cert: cert.update(version=True), "version must be 1"),
    (lambda cert: cert.update(seed="short"), "seed must be 44 characters"),
    (lambda cert: cert.update(start="0"), "start must be a number"),
    (lambda cert: cert.update(scopes=["tab\t"]), "array of valid scopes"),
    (lambda cert: cert.pop("signature"), "signature is not valid"),
])
def test_a_certificate_changed_after_signing_is_refused(change, reason):
    client_id, made = temporary(["queue:resolve-task:abc/0"], name="task-client/abc")
    change(made["certificate"])
    with pytest.raises(AuthenticationFailed, match=reason):
        check(client_id, made)


def test_another_client_id_than_the_one_signed_is_refused():
    _, made = temporary(["queue:resolve-task:abc/0"], name="task-client/abc")
    with pytest.raises(AuthenticationFailed, match="wrong clientId"):
        check("task-client/other", made)


def test_times_and_lifetime():
    now = datetime.now(timezone.utc)
    for start, expiry, reason in [(now + timedelta(minutes=6), now + timedelta(hours=1), "start > now"),
                                  (now - timedelta(hours=1), now - timedelta(minutes=6), "expiry < now")]:
        client_id, made = temporary(["queue:x"], name="task-client/t", start=start, expiry=expiry)
        with pytest.raises(AuthenticationFailed, match=reason):
            check(client_id, made)
    # Within Taskcluster's 5 minutes of skew either way: accepted.
    check(*temporary(["queue:x"], name="task-client/t", start=now + timedelta(minutes=4),
                     expiry=now + timedelta(minutes=4)))
    # The client library refuses to make a certificate of more than 31 days; stretched and
    # signed again by hand, it is refused for its span, not its signature.
    client_id, made = temporary(["queue:x"], name="task-client/t", start=now, expiry=now + timedelta(days=1))
    made["certificate"]["expiry"] = made["certificate"]["start"] + (31 * 24 * 3600 + 1) * 1000
    with pytest.raises(AuthenticationFailed, match="31 days"):
        check(client_id, made)


def test_scopes_the_issuer_lacks_are_refused_and_so_is_naming_a_client_it_may_not_create():
    client_id, made = temporary(["queue:resolve-task:abc/0", "secrets:get:everything"], name="task-client/abc")
    with pytest.raises(AuthenticationFailed, match="doesn't satisfy all certificate scopes"):
        check(client_id, made)
    client_id, made = temporary(["queue:x"], name="someone-else")
    with pytest.raises(AuthenticationFailed, match="auth:create-client:someone-else"):
        check(client_id, made)


def test_authorized_scopes_narrow_and_may_not_widen():
    limited = check(ISSUER, {"authorizedScopes": ["queue:get-task:*"]})
    assert limited.scopes == ("queue:get-task:*",) and limited.key == TOKEN
    assert check(ISSUER, {"authorizedScopes": []}).scopes == ()
    with pytest.raises(AuthenticationFailed, match="do not satisfy authorizedScopes"):
        check(ISSUER, {"authorizedScopes": ["secrets:get:x"]})
    # Temporary credentials narrowed in turn, as the official client sends them.
    client_id, made = temporary(["queue:a", "queue:b"], name="task-client/n")
    assert check(client_id, {**made, "authorizedScopes": ["queue:b"]}).scopes == ("queue:b",)


def test_ext_as_the_official_client_encodes_it():
    client_id, made = temporary(["queue:x"], name="task-client/e")
    client = taskcluster.Queue({"rootUrl": "https://tc", "credentials": {"clientId": client_id, **{
        "accessToken": made["accessToken"], "certificate": json.dumps(made["certificate"])}},
        "authorizedScopes": ["queue:x"]})
    ext = parse_ext(client.makeHawkExt().decode())   # the client makes bytes; the header carries text
    assert ext["authorizedScopes"] == ["queue:x"] and ext["certificate"]["issuer"] == ISSUER
    assert parse_ext(None) == {} and parse_ext(base64.b64encode(b"[1]").decode()) == {}
    with pytest.raises(AuthenticationFailed, match="Failed to parse ext"):
        parse_ext("not base64 json!")
    with pytest.raises(AuthenticationFailed, match="Failed to parse ext"):   # JavaScript's JSON has no NaN
        parse_ext(base64.b64encode(b'{"certificate": {"expiry": NaN}}').decode())
