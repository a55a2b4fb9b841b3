"""Where one of an account's services is, and what authorizes a request to it, read from the
connection string the app is given.

Tables and queues are spoken to by our own clients (`table`, `message_queue`), so the
connection string is read here rather than by the SDKs. It either names a service's endpoint
(`TableEndpoint=`, `QueueEndpoint=`; the emulator's carry the account in their path) or leaves
it to be built from the account name and the endpoint suffix, and it holds the account key or
a shared access signature instead. Each service signs its own way: a subclass per service
(`table_endpoint`, `queue_endpoint`) says which it is and how.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit


@dataclass(frozen=True)
class ServiceEndpoint:
    SERVICE: ClassVar[str] = ""     # "table", "queue": names the setting and the Azure host

    scheme: str
    host: str
    port: int
    base_path: str                  # "" in Azure; "/<account>" for the emulator's path-style URLs
    account: str
    key: bytes | None = field(default=None, repr=False)   # the account key, decoded (signs each request)
    sas: str = field(default="", repr=False)              # or a shared access signature, sent with each request

    @classmethod
    def parse(cls, connection: str):
        settings = dict(part.split("=", 1) for part in connection.split(";") if "=" in part)
        account = settings.get("AccountName", "")
        url = settings.get(f"{cls.SERVICE.capitalize()}Endpoint") or (
            f"{settings.get('DefaultEndpointsProtocol', 'https')}://{account}.{cls.SERVICE}."
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

    def authorization(self, signed: str) -> str:
        """The Shared Key `Authorization` header of a request whose string to sign is `signed`
        (each service builds that string its own way)."""
        signature = base64.b64encode(hmac.new(self.key, signed.encode(), hashlib.sha256).digest()).decode()
        return f"SharedKey {self.account}:{signature}"
