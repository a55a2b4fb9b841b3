"""Paging in Taskcluster's shape, in one place: a request's `continuationToken` and `limit`
become the key to start after and a page size, and the last key of a page that has more
becomes the answer's `continuationToken`. Services page by key and know nothing of tokens.
"""

from __future__ import annotations

import base64
import re
from typing import Callable

from shared.api.errors import InvalidRequestArguments
from shared.domain.errors import InvalidInput

MAX_PAGE = 1000   # Taskcluster's largest page; a larger limit is clamped to it, not refused

# A service's page: `(after, limit) -> (body, last key or None when nothing follows)`.
PageOf = Callable[[str, int], tuple[dict, "str | None"]]


def paged(query: dict, page_of: PageOf) -> dict:
    """The answer of a listing call: the page `page_of` reads, with a continuation token when
    more follow. `query` is the call's checked query (see `parse_limit`)."""
    body, last = page_of(decode_token(query.get("continuationToken")), query.get("limit", MAX_PAGE))
    if last is not None:
        body["continuationToken"] = encode_token(last)
    return body


def encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def decode_token(token: str | None) -> str:
    if not token:
        return ""
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"continuationToken: {token!r} is not a token this API issued") from exc


def parse_limit(text: str) -> int:
    """A page size: ASCII digits only (`str.isdigit()` is true for '²', which int() refuses).
    A limit above the largest page is clamped to it, as Taskcluster does, not refused; its
    length is compared first, since int() refuses a number of more than 4,300 digits."""
    digits = text.lstrip("0")
    if not re.fullmatch("[0-9]+", text) or not digits:
        raise InvalidRequestArguments(f"limit: {text[:50]!r} must be a positive whole number")
    return MAX_PAGE if len(digits) > len(str(MAX_PAGE)) else min(int(digits), MAX_PAGE)
