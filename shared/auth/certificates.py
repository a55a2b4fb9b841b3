"""A request's `ext`: temporary credentials' certificate and `authorizedScopes`, checked
exactly as Taskcluster's auth service checks them (its `limitClientWithExt`).

A certificate `{version, scopes, start, expiry, seed, signature, issuer?}` is signed with
the issuer's access token over

    version:1 / [clientId:<name> / issuer:<issuer>] / seed:<seed> / start:<ms> / expiry:<ms> / scopes: / <scope>...

(one per line; the two bracketed lines only for named credentials), and the temporary
access token is the URL-safe base64 HMAC-SHA256 of the seed under that same token. The
certificate may not start more than 5 minutes ahead, may not have expired more than 5
minutes ago (Taskcluster's clock-skew allowance), may not span more than 31 days, and its
scopes must be satisfied by the issuer's, who must also hold `auth:create-client:<name>`
to name them. `authorizedScopes` narrows a request to scopes the credentials satisfy.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from shared.auth.errors import AuthenticationFailed
from shared.auth.scopes import ScopeSet, valid_scope
from shared.domain.timestamps import to_iso

SKEW_MS = 5 * 60 * 1000
MAX_SPAN_MS = 31 * 24 * 60 * 60 * 1000
SEED_LENGTH = 44


def parse_ext(ext: str | None) -> dict:
    """The JSON object a Hawk `ext` carries in (URL-safe or standard) base64; {} if none."""
    if not ext:
        return {}
    try:
        text = ext.replace("-", "+").replace("_", "/")
        value = json.loads(base64.b64decode(text + "=" * (-len(text) % 4), validate=True),
                           parse_constant=_not_json)   # NaN would pass every time check
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise AuthenticationFailed("Failed to parse ext") from None
    return value if isinstance(value, dict) else {}


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")


def issuer_of(credential_name: str, ext: dict) -> str:
    """The client whose access token signed these credentials: the certificate's issuer
    for named temporary credentials, else the client named in the request."""
    certificate = ext.get("certificate")
    issuer = certificate.get("issuer") if isinstance(certificate, dict) else None
    if not _truthy(issuer):
        return credential_name
    if not isinstance(issuer, str):
        raise AuthenticationFailed("ext.certificate.issuer must be a string")
    if issuer == credential_name:
        raise AuthenticationFailed("ext.certificate.issuer must differ from the supplied clientId")
    return issuer


@dataclass(frozen=True)
class Limited:
    """The credentials after their ext: the key the request must be signed with, and their
    scopes before role expansion."""

    key: str
    scopes: tuple[str, ...]
    expires: str | None = None   # a certificate's expiry (ISO 8601), if there is one


def apply_ext(credential_name: str, issuer: str, issuer_token: str, issuer_scopes: ScopeSet, ext: dict,
              expand: Callable[[list[str]], ScopeSet], now_ms: float | None = None) -> Limited:
    """`issuer_scopes` are expanded; `expand` expands a list of scopes (roles and the
    anonymous role included)."""
    key, scopes, expires = issuer_token, issuer_scopes, None
    if _truthy(ext.get("certificate")):
        key, certified = _check_certificate(credential_name, issuer, issuer_token, issuer_scopes,
                                            ext["certificate"], time.time() * 1000 if now_ms is None else now_ms)
        scopes, expires = ScopeSet(certified), _iso_of_ms(ext["certificate"]["expiry"])
    authorized = ext.get("authorizedScopes")
    if _truthy(authorized):   # an empty list too: it narrows the request to the anonymous scopes
        if not isinstance(authorized, list):
            raise AuthenticationFailed("ext.authorizedScopes must be an array")
        if not all(valid_scope(scope) for scope in authorized):
            raise AuthenticationFailed("ext.authorizedScopes must be an array of valid scopes")
        available = expand([*scopes.scopes, "assume:anonymous"])
        if not available.satisfies({"AllOf": authorized}):
            raise AuthenticationFailed(
                "Supplied credentials do not satisfy authorizedScopes; credentials have scopes:\n\n```\n"
                + "\n".join(available.scopes) + "\n```\n\nauthorizedScopes are:\n\n```\n"
                + "\n".join(authorized) + "\n```")
        return Limited(key, tuple(authorized), expires)
    return Limited(key, scopes.scopes, expires)


def _iso_of_ms(milliseconds: float) -> str:
    return to_iso(datetime.fromtimestamp(milliseconds / 1000, timezone.utc))


def _check_certificate(credential_name: str, issuer: str, issuer_token: str, issuer_scopes: ScopeSet,
                       certificate, now_ms: float) -> tuple[str, list[str]]:
    if not isinstance(certificate, dict):
        raise AuthenticationFailed("ext.certificate must be a JSON object")
    if not _is_number(certificate.get("version")) or certificate["version"] != 1:
        raise AuthenticationFailed("ext.certificate.version must be 1")
    seed = certificate.get("seed")
    if not isinstance(seed, str):
        raise AuthenticationFailed("ext.certificate.seed must be a string")
    if len(seed) != SEED_LENGTH:
        raise AuthenticationFailed(f"ext.certificate.seed must be {SEED_LENGTH} characters")
    start, expiry, scopes = certificate.get("start"), certificate.get("expiry"), certificate.get("scopes")
    if not _is_number(start):
        raise AuthenticationFailed("ext.certificate.start must be a number")
    if not _is_number(expiry):
        raise AuthenticationFailed("ext.certificate.expiry must be a number")
    if not isinstance(scopes, list):
        raise AuthenticationFailed("ext.certificate.scopes must be an array")
    if not all(valid_scope(scope) for scope in scopes):
        raise AuthenticationFailed("ext.certificate.scopes must be an array of valid scopes")
    if start > now_ms + SKEW_MS:
        raise AuthenticationFailed("ext.certificate.start > now")
    if expiry < now_ms - SKEW_MS:
        raise AuthenticationFailed("ext.certificate.expiry < now")
    if expiry - start > MAX_SPAN_MS:
        raise AuthenticationFailed("ext.certificate cannot last longer than 31 days!")
    if issuer != credential_name:
        create = f"auth:create-client:{credential_name}"
        if not issuer_scopes.has(create):
            raise AuthenticationFailed(
                f"ext.certificate issuer `{issuer}` doesn't have `{create}` for supplied clientId.")
    elif "clientId" in certificate:
        raise AuthenticationFailed("ext.certificate.clientId must only be used with ext.certificate.issuer")
    if not issuer_scopes.satisfies({"AllOf": scopes}):
        raise AuthenticationFailed(
            f"ext.certificate issuer `{issuer}` doesn't satisfy all certificate scopes {', '.join(scopes)}.  "
            "The temporary credentials were not generated correctly.")
    lines = ["version:1"]
    if _truthy(certificate.get("issuer")):
        lines += [f"clientId:{credential_name}", f"issuer:{issuer}"]
    lines += [f"seed:{seed}", f"start:{_js_number(start)}", f"expiry:{_js_number(expiry)}", "scopes:", *scopes]
    token = issuer_token.encode()
    expected = base64.b64encode(hmac.new(token, "\n".join(lines).encode(), hashlib.sha256).digest())
    signature = certificate.get("signature")
    if not isinstance(signature, str) or not hmac.compare_digest(signature.encode(), expected):
        raise AuthenticationFailed("ext.certificate.signature is not valid"
                                   + (", or wrong clientId provided" if _truthy(certificate.get("issuer")) else ""))
    temporary = base64.urlsafe_b64encode(hmac.new(token, seed.encode(), hashlib.sha256).digest())
    return temporary.decode().rstrip("="), scopes


def _truthy(value) -> bool:
    """JavaScript's truthiness, which decides in Taskcluster whether a field is there at
    all (`[]` and `{}` are true; `0`, `""`, `null` and `false` are not)."""
    return bool(value) if value is None or isinstance(value, (bool, int, float, str)) else True


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _js_number(value: int | float) -> str:
    """A number as JavaScript prints it (the signature was made over that text)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
