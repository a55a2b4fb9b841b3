"""Signing raw `requests` calls as Taskcluster's official client signs its own: a Hawk
header made by `mohawk` over the URL, method and body, with the client's own `ext`
(a temporary credentials' certificate, `authorizedScopes`)."""

from __future__ import annotations

import mohawk
import requests
import taskcluster


class HawkAuth(requests.auth.AuthBase):
    def __init__(self, credentials: dict, **client_options) -> None:
        self.credentials = credentials
        # The official client's own `ext`, from the same credentials and options.
        # (The client turns the credentials it is given into bytes: it gets a copy.)
        self.ext = taskcluster.Queue({"rootUrl": "https://unused", "credentials": dict(credentials),
                                      **client_options}).makeHawkExt() or None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        sender = mohawk.Sender({"id": self.credentials["clientId"], "key": self.credentials["accessToken"],
                                "algorithm": "sha256"}, request.url, request.method,
                               content=body.encode() if isinstance(body, str) else body,
                               content_type=request.headers.get("Content-Type", ""), ext=self.ext)
        request.headers["Authorization"] = sender.request_header
        return request
