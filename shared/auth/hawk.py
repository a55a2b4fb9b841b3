"""Verifying who signed a request: a Hawk `Authorization` header, or a bewit in the URL.

The MAC covers the method, the raw path and query exactly as sent (`%2F` stays encoded),
the host and port the client signed, the timestamp and nonce, the payload hash when the
client sent one (then the body must match it) and `ext`. Timestamps may be 15 minutes off
the server's clock, as Taskcluster allows. A bewit (`?bewit=...`, from a client's
`buildSignedUrl`) signs a GET of that URL until its expiry. The MACs are computed by
`mohawk`; nothing here reports a MAC it computed.

Like Taskcluster, no nonce is remembered: a request replayed within the 15 minutes is not
refused (TLS keeps others from seeing it).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import re
import time
from dataclasses import dataclass

import mohawk
from mohawk.base import Resource
from mohawk.exc import HawkFail, MacMismatch, MisComputedContentHash, TokenExpired
from mohawk.util import calculate_mac, parse_authorization_header

from .clients import Caller, Realm
from .errors import AuthenticationFailed
from .roles import RoleExpansionTooLarge

SKEW_SECONDS = 15 * 60
ALGORITHM = "sha256"
# mohawk's debug lines quote headers and normalized request strings.
logging.getLogger("mohawk").setLevel(logging.INFO)
# Taskcluster's (and Hawk's) reading of a bewit: the last query parameter, or followed by others.
_BEWIT = re.compile(r"^(/.*)([?&])bewit=([^&]*)(?:&(.+))?$", re.DOTALL)
_BEWIT_TEXT = re.compile(r"[\w-]*")


@dataclass(frozen=True)
class SignedRequest:
    """What a signature covers, as the server received it."""

    method: str
    resource: str          # raw path and query, as sent
    host: str
    port: int
    authorization: str | None
    content: bytes = b""
    content_type: str = ""

    def url(self, resource: str | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.resource if resource is None else resource}"


def authenticate(request: SignedRequest, realm: Realm) -> Caller:
    """The caller, or AuthenticationFailed with the reason."""
    has_bewit = _BEWIT.match(request.resource) is not None
    if request.authorization and has_bewit:
        raise AuthenticationFailed("Cannot use two authentication schemes at once; this request has both a bewit "
                                   "in its query string and an Authorization header")
    try:
        if request.authorization:
            return _hawk_header(request, realm)
        if has_bewit:
            return _bewit(request, realm)
    except RoleExpansionTooLarge as error:
        raise AuthenticationFailed(str(error)) from None
    return realm.anonymous


def _hawk_header(request: SignedRequest, realm: Realm) -> Caller:
    try:
        attributes = parse_authorization_header(request.authorization)
        client_id = attributes["id"]
    except (HawkFail, ValueError, KeyError):
        raise AuthenticationFailed("Invalid Authorization header: not a Hawk header with an id") from None
    key, scopes = realm.credentials(client_id, attributes.get("ext"))
    try:
        mohawk.Receiver(lambda _: {"id": client_id, "key": key, "algorithm": ALGORITHM}, request.authorization,
                        request.url(), request.method, content=request.content,
                        content_type=request.content_type, seen_nonce=_not_remembered,
                        accept_untrusted_content=True, timestamp_skew_in_seconds=SKEW_SECONDS)
    except MacMismatch:
        raise AuthenticationFailed("Bad mac: the signature does not match this request (its method, path, "
                                   f"query, host {request.host}:{request.port}, timestamp or ext) "
                                   "signed with this client's access token") from None
    except MisComputedContentHash:
        raise AuthenticationFailed("Invalid payload hash: the body is not the one the request was signed "
                                   "with") from None
    except TokenExpired:
        raise AuthenticationFailed(f"Stale timestamp: ts {attributes.get('ts', '')[:20]} is more than {SKEW_SECONDS} s "
                                   f"from the server's time {int(time.time())}") from None
    except (HawkFail, ValueError, KeyError) as error:
        raise AuthenticationFailed(f"Invalid Hawk authorization ({type(error).__name__})") from None
    return Caller(client_id, scopes, "hawk")


def _not_remembered(sender_id: str, nonce: str, timestamp: str) -> bool:
    return False


def _bewit(request: SignedRequest, realm: Realm) -> Caller:
    if request.method not in ("GET", "HEAD"):
        raise AuthenticationFailed("A bewit signs GET requests only")
    path, separator, encoded, rest = _BEWIT.match(request.resource).groups()
    try:
        if not _BEWIT_TEXT.fullmatch(encoded):
            raise ValueError
        decoded = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("ascii")
        client_id, expiry, their_mac, ext = decoded.split("\\")
        expires_at = int(expiry)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise AuthenticationFailed("Invalid bewit: not id\\expiry\\mac\\ext in URL-safe base64") from None
    if not client_id:
        raise AuthenticationFailed("Invalid bewit: it names no client")
    if expires_at <= time.time():
        raise AuthenticationFailed(f"Access expired: the bewit expired at {expires_at}")
    key, scopes = realm.credentials(client_id, ext)
    try:
        resource = Resource(url=request.url(path + (separator + rest if rest else "")), method="GET",
                            credentials={"id": client_id, "key": key, "algorithm": ALGORITHM},
                            timestamp=expiry, nonce="", ext=ext)
        mac = calculate_mac("bewit", resource, None)
    except (HawkFail, ValueError):
        raise AuthenticationFailed("Invalid bewit: its client id or ext holds characters Hawk refuses") from None
    if not hmac.compare_digest(mac, their_mac.encode()):
        raise AuthenticationFailed("Bad mac: the bewit does not sign this URL (its path, query, host "
                                   f"{request.host}:{request.port} or expiry) with this client's access token")
    return Caller(client_id, scopes, "bewit")
