"""Signed blob URLs without an account key: user delegation SAS, signed with a key the Blob
service hands to the app's identity (Get User Delegation Key), kept until near its expiry.

The signature is ours, over the string-to-sign of signed version (`sv`) 2020-12-06, which
Azure's Blob service takes for that version (every version it supports is honoured as
written) and which Azurite 3.35 checks the same way for versions 2020-12-06 up to 2025-07-04.
azure-storage-blob 12.31's `generate_blob_sas` always signs its newest layout (two lines for
signed request headers and query parameters, `srh` and `srq`, and the delegated user's
tenant and object) whatever `sv` it is given, which Azurite 3.35 does not know: it refuses
those URLs (403). 2020-12-06 is also late enough for what the URLs are used for: a client
that sends no `x-ms-version` is served at `sv`, and Put Blob takes 5,000 MiB since 2019-12-12.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlencode

SIGNED_VERSION = "2020-12-06"
KEY_LIFETIME = timedelta(days=1)      # asked for (Azure's most is 7 days)
KEY_MARGIN = timedelta(hours=1)       # a key with less left is replaced (no URL lives longer)
CLOCK_SKEW = timedelta(minutes=5)     # the key is valid from this long ago


class DelegationKeys:
    """The service's current user delegation key, asked for again when it nears its expiry."""

    def __init__(self, service) -> None:
        self._service = service          # a BlobServiceClient signed in with a token credential
        self._key = None
        self._lock = threading.Lock()

    def valid_until(self, expiry: datetime):
        """A key valid until `expiry` at least (a URL's may not outlive its key)."""
        with self._lock:
            if self._key is None or _parse(self._key.signed_expiry) < expiry + KEY_MARGIN:
                now = datetime.now(timezone.utc)
                self._key = self._service.get_user_delegation_key(now - CLOCK_SKEW,
                                                                   max(now + KEY_LIFETIME, expiry + KEY_MARGIN))
            return self._key


def blob_sas(key, account: str, container: str, blob: str, permissions: str, expiry: datetime) -> str:
    """The query string of a user delegation SAS for one blob with `permissions` (in the
    service's order: r, a, c, w, d...) until `expiry`, signed with `key` (a UserDelegationKey)."""
    fields = {"sp": permissions, "se": _format(expiry), "sv": SIGNED_VERSION, "sr": "b",
              "skoid": key.signed_oid, "sktid": key.signed_tid, "skt": key.signed_start,
              "ske": key.signed_expiry, "sks": key.signed_service, "skv": key.signed_version}
    fields["sig"] = signature(key.value, string_to_sign(fields, f"/blob/{account}/{container}/{blob}"))
    return urlencode(fields, quote_via=quote, safe="")


def string_to_sign(fields: dict[str, str], resource: str) -> str:
    """Version 2020-12-06's: permissions, start, expiry, the canonical resource, the key's
    six fields, the authorized and unauthorized object ids and the correlation id (none here),
    IP range, protocol, version, resource kind, snapshot time, encryption scope, and the five
    response header overrides, a line each."""
    lines = [fields.get("sp", ""), fields.get("st", ""), fields.get("se", ""), resource,
             *(fields.get(name, "") for name in ("skoid", "sktid", "skt", "ske", "sks", "skv")),
             fields.get("saoid", ""), fields.get("suoid", ""), fields.get("scid", ""),
             fields.get("sip", ""), fields.get("spr", ""), fields.get("sv", ""), fields.get("sr", ""),
             fields.get("snapshot", ""), fields.get("ses", ""),
             *(fields.get(name, "") for name in ("rscc", "rscd", "rsce", "rscl", "rsct"))]
    return "\n".join(lines)


def signature(key_value: str, text: str) -> str:
    return base64.b64encode(hmac.new(base64.b64decode(key_value), text.encode(), hashlib.sha256).digest()).decode()


def _format(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime:
    """A time the service wrote (`2026-01-02T03:04:05Z`, perhaps with a fraction)."""
    return datetime.fromisoformat(text.rstrip("Z").split(".")[0]).replace(tzinfo=timezone.utc)
