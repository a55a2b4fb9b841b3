"""The identity's storage token: one per process, shared by threads, fetched again before it
expires; a failed fetch is survived while the current token lasts."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.core.exceptions import ClientAuthenticationError

from devhost.azurite_tokens import STORAGE_SCOPE, AzuriteCredential, claims_of
from shared.storage.client import tokens
from shared.storage.client.tokens import REFRESH_BEFORE, StorageToken


class Clock:
    """Now, as the credential's tokens are dated, moved on by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Failing(AzuriteCredential):
    """An identity endpoint that stops answering after `good` tokens."""

    def __init__(self, good: int, **options) -> None:
        super().__init__(**options)
        self.good = good

    def get_token(self, *scopes, **kwargs):
        if self.issued >= self.good:
            raise ClientAuthenticationError("the identity endpoint did not answer")
        return super().get_token(*scopes, **kwargs)


def test_threads_share_one_token_for_storage():
    credential = AzuriteCredential(lifetime=3600)
    token = StorageToken(credential)
    with ThreadPoolExecutor(max_workers=16) as pool:
        headers = set(pool.map(lambda _: token.authorization(), range(200)))
    assert credential.issued == 1 and len(headers) == 1
    assert claims_of(headers.pop().removeprefix("Bearer "))["aud"] == "https://storage.azure.com"
    assert token.get_token(STORAGE_SCOPE).token == token.get_token(STORAGE_SCOPE).token and credential.issued == 1


def test_a_token_is_fetched_again_before_it_expires_and_not_before():
    clock = Clock()
    credential = AzuriteCredential(lifetime=3600)
    token = StorageToken(credential, clock=clock)
    first = token.authorization()
    clock.now += 3600 - REFRESH_BEFORE - 60         # still well within its life
    assert token.authorization() == first and credential.issued == 1
    clock.now += 120                                  # within REFRESH_BEFORE of its expiry
    token.authorization()
    assert credential.issued == 2


def test_a_failed_fetch_keeps_the_current_token_while_it_lasts_then_raises():
    clock = Clock()
    credential = Failing(good=1, lifetime=3600)
    token = StorageToken(credential, clock=clock)
    first = token.authorization()
    clock.now += 3600 - REFRESH_BEFORE + 10          # time to refresh: the endpoint fails
    assert token.authorization() == first
    clock.now += 3600                                 # expired by now
    with pytest.raises(ClientAuthenticationError):
        token.authorization()


def test_another_scope_is_asked_of_the_credential_and_one_token_is_kept_per_sign_in():
    credential = AzuriteCredential()
    token = StorageToken(credential)
    assert claims_of(token.get_token("https://vault.azure.net/.default").token)["aud"] == "https://vault.azure.net"
    made = []
    first = tokens.shared_token(("test", id(made)), lambda: made.append(1) or credential)
    assert tokens.shared_token(("test", id(made)), lambda: made.append(1) or credential) is first and made == [1]
