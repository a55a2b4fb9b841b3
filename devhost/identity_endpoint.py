"""A local stand-in for App Service's managed identity endpoint, handing out tokens an
Azurite in OAuth mode takes (`azurite_tokens`).

In Azure a Function App's process finds its managed identity through two environment
variables, `IDENTITY_ENDPOINT` (a plain HTTP URL on loopback) and `IDENTITY_HEADER` (a
secret its requests carry), which azure-identity's ManagedIdentityCredential (and
DefaultAzureCredential) read. A local host given the same two variables (`environment`)
signs in exactly as in Azure, with no code of its own for tests: this is the seam.
It speaks the protocol's version 2019-08-01: `GET ?api-version=2019-08-01&resource=<uri>`
with the header `X-IDENTITY-HEADER`, answered `{access_token, expires_on, resource,
token_type}`; a request without the header is refused (401), as the platform's is.
"""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from devhost.azurite_tokens import AzuriteCredential


class IdentityEndpoint:
    def __init__(self, credential: AzuriteCredential | None = None) -> None:
        self.credential = credential or AzuriteCredential()
        self.header = secrets.token_urlsafe(24)
        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="identity-endpoint", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/msi/token"

    @property
    def environment(self) -> dict[str, str]:
        """What a process needs to sign in through this endpoint, as App Service sets it."""
        return {"IDENTITY_ENDPOINT": self.url, "IDENTITY_HEADER": self.header}

    def start(self) -> IdentityEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> IdentityEndpoint:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def answer(self, path: str, header: str | None) -> tuple[int, dict]:
        query = parse_qs(urlsplit(path).query)
        self.requests += 1
        if header != self.header:
            return 401, {"error": "invalid_request", "error_description": "X-IDENTITY-HEADER is missing or wrong"}
        resource = (query.get("resource") or [""])[0]
        if not resource or query.get("api-version") != ["2019-08-01"]:
            return 400, {"error": "invalid_request", "error_description": "resource and api-version=2019-08-01 are needed"}
        token = self.credential.get_token(resource.rstrip("/") + "/.default")
        return 200, {"access_token": token.token, "expires_on": str(token.expires_on), "resource": resource,
                     "token_type": "Bearer"}


def _handler(endpoint: IdentityEndpoint):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = endpoint.answer(self.path, self.headers.get("X-IDENTITY-HEADER"))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass
    return Handler
