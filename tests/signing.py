"""Signing raw `requests` calls as Taskcluster's official client signs its own: a Hawk
header made by `mohawk` over the URL, method and body, with the client's own `ext`
(a temporary credentials' certificate, `authorizedScopes`)."""

from __future__ import annotations

from urllib.parse import urlsplit

import mohawk
import requests
import taskcluster


class HawkAuth(requests.auth.AuthBase):
    """`timestamp`: sign as of that time (seconds since the epoch) instead of now; `origin`:
    sign as if the URL's scheme, host and port were these (a request sent past a proxy)."""

    def __init__(self, credentials: dict, timestamp: int | None = None, origin: str | None = None,
                 **client_options) -> None:
        self.credentials = credentials
        self.timestamp = timestamp
        self.origin = origin
        # The official client's own `ext`, from the same credentials and options.
        # (The client turns the credentials it is given into bytes: it gets a copy.)
        self.ext = taskcluster.Queue({"rootUrl": "https://unused", "credentials": dict(credentials),
                                      **client_options}).makeHawkExt() or None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        url = request.url
        if self.origin:
            parts = urlsplit(url)
            url = self.origin + parts.path + (f"?{parts.query}" if parts.query else "")
        sender = mohawk.Sender({"id": self.credentials["clientId"], "key": self.credentials["accessToken"],
                                "algorithm": "sha256"}, url, request.method,
                               content=body.encode() if isinstance(body, str) else body,
                               content_type=request.headers.get("Content-Type", ""), ext=self.ext,
                               _timestamp=self.timestamp)
        request.headers["Authorization"] = sender.request_header
        return request
