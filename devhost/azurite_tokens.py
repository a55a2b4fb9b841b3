"""Entra ID access tokens as Azurite's OAuth mode takes them, for the local stand-in of an
app's managed identity.

Azurite (`--oauth basic`) decodes a bearer token as a JWT and checks its issuer (an Entra ID
one: `https://sts.windows.net/<tenant>/`), its audience (`https://storage.azure.com`, or the
account's own service URL), and `iat`/`nbf`/`exp` around now; not its signature. So the
tokens here are unsigned JWTs with those claims, for the audience the scope asks for: a
credential asked for another resource's scope gets a token storage refuses, as in Azure.

`AzuriteCredential` is what Azure's SDK clients (and azure-identity's credentials) are:
an object with `get_token(*scopes) -> AccessToken`. It counts the tokens it issued, so a
test can see whether a client caches them, and can issue short-lived ones to see a client
refresh them.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid

from azure.core.credentials import AccessToken

STORAGE_SCOPE = "https://storage.azure.com/.default"
TENANT = str(uuid.uuid5(uuid.NAMESPACE_DNS, "tenant.azurite.local"))   # any id: Azurite checks the issuer's form


class AzuriteCredential:
    def __init__(self, lifetime: float = 3600, tenant: str = TENANT, object_id: str | None = None) -> None:
        self.lifetime, self.tenant = lifetime, tenant
        self.object_id = object_id or str(uuid.uuid4())   # the identity's, as a managed identity has one
        self.issued = 0
        self._lock = threading.Lock()

    def get_token(self, *scopes: str, **kwargs) -> AccessToken:
        """A token for the resource of the first scope (`<resource>/.default`)."""
        if not scopes:
            raise ValueError("a scope is required, such as " + STORAGE_SCOPE)
        now = int(time.time())
        expires = now + int(self.lifetime)
        with self._lock:
            self.issued += 1
        return AccessToken(token(scopes[0].removesuffix("/.default"), self.tenant, self.object_id, now, expires),
                           expires)

    def close(self) -> None:
        pass

    def __enter__(self) -> AzuriteCredential:
        return self

    def __exit__(self, *exc) -> None:
        pass


def token(audience: str, tenant: str, object_id: str, issued_at: int, expires: int) -> str:
    """An unsigned JWT ("alg": "none") with the claims of an Entra ID app-only token."""
    header = {"typ": "JWT", "alg": "none"}
    claims = {"aud": audience, "iss": f"https://sts.windows.net/{tenant}/", "iat": issued_at,
              "nbf": issued_at - 60, "exp": expires, "tid": tenant, "oid": object_id, "sub": object_id,
              "appid": object_id, "idtyp": "app", "ver": "1.0"}
    return f"{_segment(header)}.{_segment(claims)}."


def claims_of(jwt: str) -> dict:
    """The claims of a JWT (unverified: what Azurite reads of it)."""
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _segment(part: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(part, separators=(",", ":")).encode()).rstrip(b"=").decode()
