"""Task ids are slugids: a v4 UUID in URL-safe base64 without padding, first bit clear."""

import base64
import re
import string
import uuid

SLUGID_CHARACTERS = string.ascii_letters + string.digits + "_-"   # URL-safe base64
SLUGID_PATTERN = r"^[A-Za-z0-9_-]{8}[Q-T][A-Za-z0-9_-][CGKOSWaeimquy26-][A-Za-z0-9_-]{10}[AQgw]$"
_SLUGID = re.compile(SLUGID_PATTERN)


def new_slugid() -> str:
    """A 'nice' slugid (leading bit clear, so it never starts with '-'), as Taskcluster makes."""
    raw = bytearray(uuid.uuid4().bytes)
    raw[0] &= 0x7F
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


def slugid_from_digest(digest: bytes) -> str:
    """A slugid fixed by a digest's first 16 bytes, shaped as `new_slugid` makes one (a v4 UUID,
    first bit clear): for ids that must come out the same when the same thing is made again."""
    raw = bytearray(digest[:16])
    raw[0] &= 0x7F
    raw[6] = (raw[6] & 0x0F) | 0x40        # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80        # the RFC 4122 variant
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


def is_slugid(value: object) -> bool:
    # fullmatch: the pattern's `$` would also match before a final newline.
    return isinstance(value, str) and _SLUGID.fullmatch(value) is not None
