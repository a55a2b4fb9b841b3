"""Host-neutral HTTP request and response, so the API never sees a Functions type."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str                    # raw (still percent-encoded) path below the service root
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    url: str = ""                # the whole URL as received, still encoded (what a Hawk signature covers)

    @classmethod
    def from_url(cls, method: str, url: str, service_root: str, body: bytes, headers: dict) -> ApiRequest:
        """Cut the path below `service_root` (e.g. '/queue/v1') out of the raw URL.

        The raw path is used because hosts differ in how they decode '%2F' in route
        values; the router decodes each segment itself.
        """
        parts = urlsplit(url)
        path = parts.path
        start = path.find(service_root)
        path = path[start + len(service_root):] if start >= 0 else path
        return cls(method.upper(), path or "/", dict(parse_qsl(parts.query)), body or b"",
                   {key.lower(): value for key, value in headers.items()}, url)


@dataclass(frozen=True)
class ApiResponse:
    status: int
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return json.dumps(self.body, separators=(",", ":")).encode() if self.body is not None else b""
