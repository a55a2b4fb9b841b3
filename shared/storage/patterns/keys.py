"""Partition and row keys.

Table keys may not contain '/', '\\', '#', '?' or control characters, and task queue ids
contain '/'. Escaping is reversible and keeps the order of unescaped text for our
character sets ([A-Za-z0-9_-/]), so range queries by prefix still work.
"""

import hashlib
import re

_ESCAPES = {"%": "%25", "/": "%2F", "\\": "%5C", "#": "%23", "?": "%3F"}


def escape_key(text: str) -> str:
    return "".join(_ESCAPES.get(char, char) for char in text)


_UNESCAPES = {code: char for char, code in _ESCAPES.items()}
_CODE = re.compile("|".join(re.escape(code) for code in _UNESCAPES))


def unescape_key(key: str) -> str:
    return _CODE.sub(lambda match: _UNESCAPES[match.group(0)], key)


# Table Storage takes keys of up to 1 KiB (512 characters of UTF-16), Blob Storage names of
# up to 1,024 characters; a name that would make a longer one (artifact names reach 1,024
# characters, object names more) is kept as its beginning, `~` and the SHA-256 of the whole.
# A kept key is always shorter than the limit and a hashed one exactly as long, so the two
# never meet.
MAX_TEXT_IN_KEY = 250
MAX_BLOB_NAME = 1024


def bounded_key(text: str, limit: int = MAX_TEXT_IN_KEY) -> str:
    """`escape_key(text)`, bounded to `limit` characters (in `text`'s order but for the hash)."""
    return _bounded(escape_key(text), text, limit)


def blob_name(name: str) -> str:
    """The blob that holds the object `name`: the name with its slashes (so `t/<taskId>/`
    lists a task's blobs), each segment made safe to travel in a URL path. A segment that
    HTTP clients would fold away (`.`, `..`, an empty one) or that Azure advises against
    (one ending in `.`) gets a final `~`; the name's own `~` and `\\` (which Azure takes for
    `/`) are written `~7E` and `~5C`, so the marker is never ambiguous."""
    segments = []
    for segment in name.split("/"):
        segment = segment.replace("~", "~7E").replace("\\", "~5C")
        segments.append(segment + "~" if segment.endswith(".") or not segment else segment)
    return _bounded("/".join(segments), name, MAX_BLOB_NAME)


def _bounded(key: str, text: str, limit: int) -> str:
    if len(key) < limit:
        return key
    return key[:limit - 65] + "~" + hashlib.sha256(text.encode()).hexdigest()
