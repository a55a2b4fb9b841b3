"""The bearer token storage takes from the app's identity: one per process and sign-in,
shared by every thread and client, fetched again before it expires.

A storage request must not wait on the identity endpoint: every request of the fast path
(`table`, `message_queue`) asks for the header, so the token is kept and handed out as it is
until REFRESH_BEFORE its expiry. Then one thread fetches the next while the others go on
with the current one, still valid; a fetch that fails is tried again RETRY_AFTER later
while the current token lasts, and raised once it has expired. The SDK clients (blobs, the
local host's queue triggers) are given the same object as their credential.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from azure.core.credentials import AccessToken

log = logging.getLogger("queue.storage")
STORAGE_SCOPE = "https://storage.azure.com/.default"
REFRESH_BEFORE = 300.0   # seconds before expiry a new token is fetched (azure-core's bearer policy's margin)
LAST_USE = 30.0          # seconds before expiry a token is no longer sent: every thread waits for the next
RETRY_AFTER = 10.0       # seconds between two fetches while the current token lasts


class StorageToken:
    def __init__(self, credential, clock: Callable[[], float] = time.time) -> None:
        self._credential, self._clock = credential, clock
        self._token: AccessToken | None = None
        self._lock = threading.Lock()
        self._next_try = 0.0

    def authorization(self) -> str:
        """The `Authorization` header of a storage request."""
        return "Bearer " + self._current().token

    def get_token(self, *scopes: str, **kwargs) -> AccessToken:
        """As azure-core's TokenCredential: storage's token, kept; another scope's, asked for."""
        if scopes == (STORAGE_SCOPE,) and not kwargs.get("claims"):
            return self._current()
        return self._credential.get_token(*scopes, **kwargs)

    def _current(self) -> AccessToken:
        token, now = self._token, self._clock()
        if token is not None and token.expires_on - now > REFRESH_BEFORE:
            return token
        usable = token is not None and token.expires_on - now > LAST_USE
        if not self._lock.acquire(blocking=not usable):
            return token   # another thread is fetching the next; this one is still good
        try:
            return self._refresh(usable)
        finally:
            self._lock.release()

    def _refresh(self, usable: bool) -> AccessToken:
        current, now = self._token, self._clock()
        if current is not None and current.expires_on - now > REFRESH_BEFORE:
            return current   # fetched while this thread waited
        if usable and now < self._next_try:
            return current
        try:
            self._token = self._credential.get_token(STORAGE_SCOPE)
        except Exception as error:
            if not usable:
                raise
            self._next_try = now + RETRY_AFTER
            log.warning("storage token not refreshed (%s); the current one lasts %.0f s more",
                        type(error).__name__, current.expires_on - now)
            return current
        log.info("storage token fetched, valid for %.0f s", self._token.expires_on - now)
        return self._token

    def close(self) -> None:
        close = getattr(self._credential, "close", None)
        if close:
            close()


_SHARED: dict[tuple, StorageToken] = {}
_SHARED_LOCK = threading.Lock()


def shared_token(key: tuple, credential: Callable[[], object]) -> StorageToken:
    """The process's token for the sign-in `key`, made with `credential()` on first use."""
    with _SHARED_LOCK:
        token = _SHARED.get(key)
        if token is None:
            token = _SHARED[key] = StorageToken(credential())
        return token
