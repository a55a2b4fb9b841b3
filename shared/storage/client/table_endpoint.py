"""Where an account's Table service is and how a request to it is signed: an account key
or a shared access signature from the connection string, or the app's identity."""

from __future__ import annotations

import email.utils

from shared.storage.client.service_endpoint import ServiceEndpoint

API_VERSION = "2019-02-02"   # the Table service version the SDK speaks too


class TableEndpoint(ServiceEndpoint):
    SERVICE = "table"

    def headers(self, method: str, path: str, content_type: str = "") -> dict[str, str]:
        """The headers that date and authorize a request for `path` (as sent, without its
        query): the service's Shared Key scheme for tables, over verb, content type, date
        and the account's resource path."""
        date = email.utils.formatdate(usegmt=True)
        return self.signed_in({"x-ms-date": date, "x-ms-version": API_VERSION},
                              f"{method}\n\n{content_type}\n{date}\n/{self.account}{path}")
