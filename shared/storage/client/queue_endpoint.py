"""Where an account's Queue service is and how a request to it is signed: an account key or a
shared access signature from the connection string, or the app's identity.

The Queue service, like Blob, takes the full form of Shared Key: unlike the Table's short form
it signs the content headers and every query parameter too, so a request's parameters come
here as they are, before they are encoded into its URL.
"""

from __future__ import annotations

import email.utils
from urllib.parse import quote, urlencode

from shared.storage.client.service_endpoint import ServiceEndpoint

# The oldest version with all we use (messagettl=-1 came in 2017-07-29); Azurite accepts it
# without --skipApiVersionCheck, which the SDK's newest versions need.
API_VERSION = "2019-02-02"


class QueueEndpoint(ServiceEndpoint):
    SERVICE = "queue"

    def target(self, path: str, query: dict[str, str]) -> str:
        """`path` with `query` as sent; the shared access signature added when it is what
        authorizes (an account key, when there is one, signs instead, as in the SDK)."""
        text = urlencode(query, quote_via=quote) if query else ""
        if self.key is None and self.token is None and self.sas:
            text = f"{text}&{self.sas}" if text else self.sas
        return f"{path}?{text}" if text else path

    def headers(self, method: str, path: str, query: dict[str, str], content_length: int = 0,
                content_type: str = "") -> dict[str, str]:
        """The headers that date and authorize a request for `path` (as sent, without its
        query) with the parameters `query` (not yet encoded)."""
        date = email.utils.formatdate(usegmt=True)
        signed = "" if self.key is None else (_standard_headers(method, content_length, content_type) +
                                              f"x-ms-date:{date}\nx-ms-version:{API_VERSION}\n"
                                              f"/{self.account}{path}{_parameters(query)}")
        return self.signed_in({"x-ms-date": date, "x-ms-version": API_VERSION}, signed)


def _standard_headers(method: str, content_length: int, content_type: str) -> str:
    """The verb and the standard headers signed, a line each in the scheme's order: Content-
    Encoding, -Language, -Length, -MD5, -Type, Date, If-Modified-Since, If-Match, If-None-Match,
    If-Unmodified-Since, Range. Only a length and a type are ever sent here; a length of 0 is
    signed as none, and the date goes in x-ms-date."""
    length = str(content_length) if content_length else ""
    return "\n".join((method, "", "", length, "", content_type, "", "", "", "", "", "")) + "\n"


def _parameters(query: dict[str, str]) -> str:
    """The query as the canonicalized resource has it: a line per parameter, by name."""
    return "".join(f"\n{name.lower()}:{value}" for name, value in sorted(query.items(), key=lambda p: p[0].lower()))
