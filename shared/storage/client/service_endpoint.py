"""Where one of an account's services is, and what authorizes a request to it: the
connection string the app is given, or the service's URL and the app's identity.

Tables and queues are spoken to by our own clients (`table`, `message_queue`), so the
connection string is read here rather than by the SDKs. It either names a service's endpoint
(`TableEndpoint=`, `QueueEndpoint=`; the emulator's carry the account in their path) or leaves
it to be built from the account name and the endpoint suffix, and it holds the account key or
a shared access signature instead. Signed in with an identity (`identity`), a request carries
the identity's bearer token (`tokens`) instead of a signature. Each service signs with a key
its own way: a subclass per service (`table_endpoint`, `queue_endpoint`) says which it is and how.
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
    token: object = field(default=None, repr=False, compare=False)   # or the identity's `StorageToken`

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

    @classmethod
    def at(cls, url: str, token):
        """The service at `url` (`https://<account>.<service>.<suffix>`, or an emulator's
        `https://host:port/<account>`), reached with the identity's `token`."""
        parts = urlsplit(url)
        path = parts.path.rstrip("/")
        account = path.strip("/").split("/")[0] if path else parts.hostname.split(".", 1)[0]
        return cls(parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), path,
                   account, token=token)

    def signed_in(self, headers: dict[str, str], signed: str) -> dict[str, str]:
        """`headers` with what authorizes the request: the Shared Key signature of the string
        `signed` (each service builds it its own way) if there is a key, or the identity's
        bearer token; with a shared access signature, nothing (it goes in the query)."""
        if self.key is not None:
            headers["Authorization"] = self.authorization(signed)
        elif self.token is not None:
            headers["Authorization"] = self.token.authorization()
        return headers

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def authorization(self, signed: str) -> str:
        """The Shared Key `Authorization` header of a request whose string to sign is `signed`
        (each service builds that string its own way)."""
        signature = base64.b64encode(hmac.new(self.key, signed.encode(), hashlib.sha256).digest()).decode()
        return f"SharedKey {self.account}:{signature}"
