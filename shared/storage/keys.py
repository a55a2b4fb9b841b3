"""Partition and row keys.

Table keys may not contain '/', '\\', '#', '?' or control characters, and task queue ids
contain '/'. Escaping is reversible and keeps the order of unescaped text for our
character sets ([A-Za-z0-9_-/]), so range queries by prefix still work.
"""

import re

_ESCAPES = {"%": "%25", "/": "%2F", "\\": "%5C", "#": "%23", "?": "%3F"}


def escape_key(text: str) -> str:
    return "".join(_ESCAPES.get(char, char) for char in text)


_UNESCAPES = {code: char for char, code in _ESCAPES.items()}
_CODE = re.compile("|".join(re.escape(code) for code in _UNESCAPES))


def unescape_key(key: str) -> str:
    return _CODE.sub(lambda match: _UNESCAPES[match.group(0)], key)
