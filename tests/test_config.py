"""Settings from the environment; the key claims' credentials are signed with."""

import json

import pytest

from shared.api.access import Access
from shared.auth.errors import AuthenticationFailed
from shared.config import DEFAULT_CREDENTIALS_TOKEN, Settings

ROOT = {"clientId": "static/root", "accessToken": "root-token-long-enough-for-tests", "scopes": ["*"]}


def settings(monkeypatch, **env) -> Settings:
    for name in ("STATIC_CLIENTS", "QUEUE_CREDENTIALS_CLIENT_ID", "QUEUE_CREDENTIALS_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.from_environ()


def test_the_credentials_token_is_the_static_clients_or_the_settings_or_derived(monkeypatch):
    issuer = {"clientId": "queue", "accessToken": "issuer-token-listed-in-static", "scopes": ["*"]}
    listed = settings(monkeypatch, STATIC_CLIENTS=json.dumps([ROOT, issuer]), QUEUE_CREDENTIALS_ACCESS_TOKEN="x")
    assert listed.credentials_access_token == "issuer-token-listed-in-static"
    explicit = settings(monkeypatch, STATIC_CLIENTS=json.dumps([ROOT]), QUEUE_CREDENTIALS_ACCESS_TOKEN="explicit")
    assert explicit.credentials_access_token == "explicit"

    # Unset, or the sample's: derived from STATIC_CLIENTS, the same in every instance.
    derived = settings(monkeypatch, STATIC_CLIENTS=json.dumps([ROOT])).credentials_access_token
    assert derived == settings(monkeypatch, STATIC_CLIENTS=json.dumps([ROOT]),
                               QUEUE_CREDENTIALS_ACCESS_TOKEN=DEFAULT_CREDENTIALS_TOKEN).credentials_access_token
    assert len(derived) >= 43 and ROOT["accessToken"] not in derived
    other = settings(monkeypatch, STATIC_CLIENTS=json.dumps([{**ROOT, "accessToken": "another-root-token-xxxxxx"}]))
    assert other.credentials_access_token != derived


def test_the_samples_public_token_is_never_trusted(monkeypatch):
    alone = settings(monkeypatch)
    assert alone.credentials_access_token == DEFAULT_CREDENTIALS_TOKEN
    with pytest.raises(AuthenticationFailed, match="not found"):
        Access.from_settings(alone).realm.credentials("queue", None)
    derived = settings(monkeypatch, STATIC_CLIENTS=json.dumps([ROOT]))
    assert Access.from_settings(derived).realm.credentials("queue", None).scopes.has("anything")
