"""Where an account's Table service is and how a request to it is signed, from the
connection string the app is given (an account key, or a shared access signature)."""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

API_VERSION = "2019-02-02"   # the Table service version the SDK speaks too


@dataclass(frozen=True)
class TableEndpoint:
    scheme: str
    host: str
    port: int
    base_path: str              # "" in Azure; "/<account>" for the emulator's path-style URLs
    account: str
    key: bytes | None = None    # the account key, decoded (signs each request)
    sas: str = ""               # or a shared access signature, sent with each request

    @classmethod
    def parse(cls, connection: str) -> TableEndpoint:
        settings = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
        account = settings.get("AccountName", "")
        url = settings.get("TableEndpoint") or (
            f"{settings.get('DefaultEndpointsProtocol', 'https')}://{account}.table."
            f"{settings.get('EndpointSuffix', 'core.windows.net')}")
        parts = urlsplit(url)
        account = account or parts.hostname.split(".", 1)[0]
        key = settings.get("AccountKey")
        sas = settings.get("SharedAccessSignature", "").lstrip("?")
        if not key and not sas:
            raise ValueError("the storage connection string has neither AccountKey nor SharedAccessSignature")
        return cls(parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                   parts.path.rstrip("/"), account, base64.b64decode(key) if key else None, sas)

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def headers(self, method: str, path: str, content_type: str = "") -> dict[str, str]:
        """The headers that date and authorize a request for `path` (as sent, without its
        query): the service's Shared Key scheme for tables, over verb, content type, date
        and the account's resource path."""
        date = email.utils.formatdate(usegmt=True)
        headers = {"x-ms-date": date, "x-ms-version": API_VERSION}
        if self.key is not None:
            signed = f"{method}\n\n{content_type}\n{date}\n/{self.account}{path}"
            signature = base64.b64encode(hmac.new(self.key, signed.encode(), hashlib.sha256).digest()).decode()
            headers["Authorization"] = f"SharedKey {self.account}:{signature}"
        return headers
