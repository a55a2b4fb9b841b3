"""Verifying who signed a request: a Hawk `Authorization` header, or a bewit in the URL.

The MAC covers the method, the raw path and query exactly as sent (`%2F` stays encoded),
the host and port the client signed, the timestamp and nonce, the payload hash when the
client sent one (then the body must match it) and `ext`. Timestamps may be 15 minutes off
the server's clock, as Taskcluster allows. A bewit (`?bewit=...`, from a client's
`buildSignedUrl`) signs a GET of that URL until its expiry. Nothing here reports a MAC it
computed.

Hawk 1.0 is a few lines of HMAC-SHA256 (`_mac`), written here rather than verified with
`mohawk`: on every API call mohawk parsed the header twice and pretty-printed it and the
URL for debug lines that were never shown, a third of a millisecond of each call. The
reading is mohawk's (which the Python client signs with): the resource is the URL's path
and query as `urlparse` splits them, the host is lowercased, a header longer than 4,096
characters or with an attribute outside Hawk's characters is refused. The tests sign with
mohawk and with the official client.

Like Taskcluster, no nonce is remembered: a request replayed within the 15 minutes is not
refused (TLS keeps others from seeing it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from shared.auth.clients import Caller, Realm
from shared.auth.errors import AuthenticationFailed
from shared.auth.roles import RoleExpansionTooLarge

SKEW_SECONDS = 15 * 60
MAX_HEADER = 4096    # characters of an Authorization header, as Hawk's libraries allow
# Taskcluster's (and Hawk's) reading of a bewit: the last query parameter, or followed by others.
_BEWIT = re.compile(r"^(/.*)([?&])bewit=([^&]*)(?:&(.+))?$", re.DOTALL)
_BEWIT_TEXT = re.compile(r"[\w-]*")
_ATTRIBUTE = re.compile(r'(\w+)="([^"\\]*)"\s*(?:,\s*|\Z)')
_ATTRIBUTE_VALUE = re.compile(r"[ a-zA-Z0-9_!#$%&'()*+,\-./:;<=>?@\[\]^`{|}~]*")
_KEYS = frozenset(("id", "ts", "tsm", "nonce", "hash", "error", "ext", "mac", "app", "dlg"))


class _Refused(ValueError):
    """The header is not a Hawk header this server reads."""


@dataclass(frozen=True)
class SignedRequest:
    """What a signature covers, as the server received it."""

    method: str
    resource: str          # raw path and query, as sent
    host: str
    port: int
    authorization: str | None
    content: bytes | None = b""   # None: not given, its hash not checked (see `authenticateHawk`)
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
        attributes = _attributes(request.authorization)
        client_id = attributes["id"]
    except (_Refused, KeyError):
        raise AuthenticationFailed("Invalid Authorization header: not a Hawk header with an id") from None
    credentials = realm.credentials(client_id, attributes.get("ext"))
    try:
        timestamp, nonce = attributes["ts"], attributes["nonce"]
        seconds = int(timestamp)
    except (KeyError, ValueError) as error:
        raise AuthenticationFailed(f"Invalid Hawk authorization ({type(error).__name__})") from None
    mac = _mac(credentials.key, "header", timestamp, nonce, request.method, _signed_resource(request.resource),
               request.host, request.port, attributes.get("hash", ""), attributes.get("ext", ""),
               attributes.get("app"), attributes.get("dlg"))
    if not hmac.compare_digest(mac, attributes.get("mac", "").encode()):
        raise AuthenticationFailed("Bad mac: the signature does not match this request (its method, path, "
                                   f"query, host {request.host}:{request.port}, timestamp or ext) "
                                   "signed with this client's access token")
    if "hash" in attributes and request.content is not None and not hmac.compare_digest(_payload_hash(request.content, request.content_type),
                                                        attributes["hash"].encode()):
        raise AuthenticationFailed("Invalid payload hash: the body is not the one the request was signed with")
    if abs(seconds - int(time.time())) > SKEW_SECONDS:
        raise AuthenticationFailed(f"Stale timestamp: ts {timestamp[:20]} is more than {SKEW_SECONDS} s "
                                   f"from the server's time {int(time.time())}")
    return Caller(client_id, credentials.scopes, "hawk", credentials.expires)


def claimed_payload_hash(authorization: str | None) -> str | None:
    """The payload hash a Hawk header says its body has (None: it says none, or it is not a
    Hawk header): for a service that checks the body itself (`authenticateHawk`)."""
    try:
        return _attributes(authorization).get("hash") if authorization else None
    except _Refused:
        return None


def _attributes(header: str) -> dict[str, str]:
    """The attributes of a Hawk header: `Hawk id="...", ts="...", ...` and nothing else."""
    if len(header) > MAX_HEADER:
        raise _Refused("the header is too long")
    scheme, _, text = header.partition(" ")
    if scheme.lower() != "hawk":
        raise _Refused("not the Hawk scheme")
    attributes: dict[str, str] = {}
    end = 0
    for match in _ATTRIBUTE.finditer(text):
        key, value = match.groups()
        if match.start() != end or key not in _KEYS or key in attributes or not _ATTRIBUTE_VALUE.fullmatch(value):
            raise _Refused(f"attribute {key!r}")
        attributes[key] = value
        end = match.end()
    if end != len(text):
        raise _Refused("text that is not an attribute")
    return attributes


def _signed_resource(resource: str) -> str:
    """The path and query a client signed for the raw `resource`, as `urlparse` reads them
    (mohawk, which the Python client signs with, uses it): `;params` of the last segment
    and a fragment are not part of it, nor is an empty query's `?`."""
    if ";" in resource or "#" in resource:
        parts = urlparse("http://host" + resource)
        return parts.path + ("?" + parts.query if parts.query else "")
    path, _, query = resource.partition("?")
    return path + "?" + query if query else path


def _mac(key: str, kind: str, timestamp: str, nonce: str, method: str, resource: str, host: str, port: int,
         payload_hash: str, ext: str, app: str | None = None, dlg: str | None = None) -> bytes:
    """Hawk's MAC of a request (`kind` "header" or "bewit"), base64."""
    lines = [f"hawk.1.{kind}", timestamp, nonce, method.upper(), resource, host.lower(), str(port), payload_hash, ext]
    if app:
        lines += [app, dlg or ""]
    normalized = "\n".join(lines) + "\n"
    return base64.b64encode(hmac.new(key.encode(), normalized.encode(), hashlib.sha256).digest())


def _payload_hash(content: bytes, content_type: str) -> bytes:
    """Hawk's hash of a body and its media type (parameters and case left out), base64."""
    media_type = content_type.split(";")[0].strip().lower()
    digest = hashlib.sha256(f"hawk.1.payload\n{media_type}\n".encode())
    digest.update(content)
    digest.update(b"\n")
    return base64.b64encode(digest.digest())


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
    credentials = realm.credentials(client_id, ext)
    if not (_ATTRIBUTE_VALUE.fullmatch(client_id) and _ATTRIBUTE_VALUE.fullmatch(ext)):
        raise AuthenticationFailed("Invalid bewit: its client id or ext holds characters Hawk refuses")
    mac = _mac(credentials.key, "bewit", expiry, "", "GET", _signed_resource(path + (separator + rest if rest else "")),
               request.host, request.port, "", ext)
    if not hmac.compare_digest(mac, their_mac.encode()):
        raise AuthenticationFailed("Bad mac: the bewit does not sign this URL (its path, query, host "
                                   f"{request.host}:{request.port} or expiry) with this client's access token")
    return Caller(client_id, credentials.scopes, "bewit", credentials.expires)
