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


def is_slugid(value: object) -> bool:
    # fullmatch: the pattern's `$` would also match before a final newline.
    return isinstance(value, str) and _SLUGID.fullmatch(value) is not None
