"""Paging in Taskcluster's shape, in one place: a request's `continuationToken` and `limit`
become the key to start after and a page size, and the last key of a page that has more
becomes the answer's `continuationToken`. Services page by key and know nothing of tokens.

As lenient as Taskcluster's queue (its paginateResults): `limit=0` answers an empty page
with no token, and a token that is not one of ours starts from the first page, unless it
holds characters no token has, which is a 400 InputError ("Invalid continuation token").
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Callable

from shared.api.errors import InvalidRequestArguments
from shared.domain.errors import InputError

MAX_PAGE = 1000   # Taskcluster's largest page; a larger limit is clamped to it, not refused

# A service's page: `(after, limit) -> (body, last key or None when nothing follows)`.
PageOf = Callable[[str, int], tuple[dict, "str | None"]]


def paged(query: dict, page_of: PageOf) -> dict:
    """The answer of a listing call: the page `page_of` reads, with a continuation token when
    more follow. `query` is the call's checked query (see `parse_limit`)."""
    after, limit = decode_token(query.get("continuationToken")), query.get("limit", MAX_PAGE)
    if limit == 0:   # the rest of the answer as a page would give it, without its entries
        body, _ = page_of(after, 1)
        return {key: [] if isinstance(value, list) else value for key, value in body.items()}
    body, last = page_of(after, limit)
    if last is not None:
        body["continuationToken"] = encode_token(last)
    return body


def encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def decode_token(token: str | None) -> str:
    """The key a token continues after; "" (the first page) for one this API did not issue."""
    if not token:
        return ""
    if not re.fullmatch("[A-Za-z0-9_-]+", token):
        raise InputError(f"continuationToken: Invalid continuation token {token[:50]!r}")
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def parse_limit(text: str, zero: bool = False) -> int:
    """A page size: ASCII digits only (`str.isdigit()` is true for '²', which int() refuses);
    0 only where `zero` allows it (a listing: an empty page). A limit above the largest page
    is clamped to it, as Taskcluster does, not refused; its length is compared first, since
    int() refuses a number of more than 4,300 digits."""
    digits = text.lstrip("0")
    if not re.fullmatch("[0-9]+", text) or not (digits or zero):
        raise InvalidRequestArguments(f"limit: {text[:50]!r} must be a positive whole number")
    return MAX_PAGE if len(digits) > len(str(MAX_PAGE)) else min(int(digits or "0"), MAX_PAGE)
