"""The clients, roles and anonymous scopes a deployment is configured with."""

import json

import pytest

from shared.auth.clients import DEFAULT_ANONYMOUS_SCOPES, ConfigurationError, Realm
from shared.auth.errors import AuthenticationFailed

TOKEN = "a-static-client-token-long-enough"


def realm(clients: list, roles: list | None = None, anonymous: str = "", issuer=None) -> Realm:
    return Realm.from_settings(json.dumps(clients), json.dumps(roles or []), anonymous, issuer)


def test_a_static_client_has_its_scopes_expanded_and_the_anonymous_ones():
    trusted = realm([{"clientId": "static/dev", "accessToken": TOKEN, "scopes": ["assume:project:p"]}],
                    [{"roleId": "project:p", "scopes": ["queue:create-task:project:p"]}])
    credentials = trusted.credentials("static/dev", None)
    key, scopes = credentials.key, credentials.scopes
    assert key == TOKEN and credentials.expires == "3000-01-01T00:00:00.000Z"
    assert scopes.has("queue:create-task:project:p") and scopes.has("queue:get-task:abc")
    with pytest.raises(AuthenticationFailed, match="Client with clientId 'static/nobody' not found"):
        trusted.credentials("static/nobody", None)


def test_anonymous_scopes_default_to_taskclusters_public_reading_and_can_be_set():
    assert set(DEFAULT_ANONYMOUS_SCOPES) <= set(realm([]).anonymous.scopes.scopes)
    assert realm([]).anonymous.scopes.has("queue:get-artifact:public/logs/live.log")
    assert not realm([]).anonymous.scopes.has("queue:get-artifact:private/x")
    closed = realm([], anonymous="[]")
    assert closed.anonymous.scopes.scopes == ("assume:anonymous",)
    assert realm([], anonymous='["queue:status:*"]').anonymous.scopes.scopes == ("assume:anonymous", "queue:status:*")


def test_the_queues_credentials_issuer_is_trusted_with_star_unless_listed():
    assert realm([], issuer=("queue", TOKEN)).credentials("queue", None).scopes.has("anything")
    listed = realm([{"clientId": "queue", "accessToken": TOKEN, "scopes": ["queue:*"]}], issuer=("queue", TOKEN))
    assert not listed.credentials("queue", None).scopes.has("secrets:get:x")


@pytest.mark.parametrize("clients, reason", [
    ("not json", "not valid JSON"),
    ('{"clientId": "x"}', "must be a JSON list"),
    (json.dumps([{"clientId": "", "accessToken": TOKEN, "scopes": []}]), "clientId must be"),
    (json.dumps([{"clientId": 'quote"', "accessToken": TOKEN, "scopes": []}]), "clientId must be"),
    (json.dumps([{"clientId": "a", "accessToken": TOKEN + "é", "scopes": []}]), "accessToken must be"),
    (json.dumps([{"clientId": "a", "accessToken": TOKEN, "scopes": "*"}]), "list of scopes"),
    (json.dumps([{"clientId": "a", "accessToken": TOKEN, "scopes": []}] * 2), "appears twice"),
])
def test_bad_settings_are_refused_without_quoting_a_token(clients, reason):
    with pytest.raises(ConfigurationError, match=reason) as refused:
        Realm.from_settings(clients, "", "")
    assert TOKEN not in str(refused.value)


class _Unreadable:
    """A directory whose storage cannot be reached."""

    asked = 0

    def client(self, client_id):
        raise ConnectionError("storage is down")

    def roles(self):
        self.asked += 1
        raise ConnectionError("storage is down")


def test_the_configured_roles_serve_while_the_stored_ones_cannot_be_read():
    directory = _Unreadable()
    configured = Realm({"static/dev": (TOKEN, ["assume:project:p"])}, {"project:p": ["secrets:get:p"]}, (),
                       directory)
    assert configured.credentials("static/dev", None).scopes.has("secrets:get:p")
    assert configured.anonymous.client_id is None
    assert directory.asked == 1   # not asked again at once: storage is given a pause
    with pytest.raises(ConnectionError):
        configured.credentials("someone-stored", None)
