"""Azurite's blob CORS rule, set as the local host starts.

The browser view reads a task's log and artifacts from Blob Storage itself: getArtifact
answers a redirect to a signed blob URL, on another origin than the page's, which a browser
reads only when the answer carries Access-Control-Allow-Origin. In Azure the storage account
has that rule from `infra/main.bicep` (`artifactReadOrigins`); Azurite starts with none, and
without it every log pane read `no log to show (Failed to fetch)`. So the host gives Azurite
the same rule (tests/devhost checks the two agree). A storage account that is not Azurite is
left as it is: its rules are its owner's.
"""

from __future__ import annotations

import logging

log = logging.getLogger("devhost.blob_cors")

AZURITE_ACCOUNT = "devstoreaccount1"   # the account every Azurite serves
ORIGINS = ["*"]
METHODS = ["GET", "HEAD"]
ALLOWED_HEADERS = ["*"]
EXPOSED_HEADERS = ["Content-Length", "Content-Type", "ETag"]
MAX_AGE_SECONDS = 3600


def is_azurite(connection: str) -> bool:
    return connection == "UseDevelopmentStorage=true" or f"AccountName={AZURITE_ACCOUNT};" in connection


def allow_browser_reads(connection: str) -> bool:
    """Give Azurite's blob service the rule unless it has it; whether it has it now."""
    from azure.core.exceptions import AzureError
    from azure.storage.blob import BlobServiceClient, CorsRule

    if not is_azurite(connection):
        return False
    wanted = CorsRule(ORIGINS, METHODS, allowed_headers=ALLOWED_HEADERS, exposed_headers=EXPOSED_HEADERS,
                      max_age_in_seconds=MAX_AGE_SECONDS)
    # No retries: an Azurite that does not answer at once is said so, and the host serves anyway.
    service = BlobServiceClient.from_connection_string(connection, retry_total=0, connection_timeout=5)
    try:
        rules = service.get_service_properties()["cors"]
        if not any(_same(rule, wanted) for rule in rules):
            service.set_service_properties(cors=[*rules, wanted])
            log.info("Azurite's blobs are now readable by web pages (CORS %s from any origin), as in Azure",
                     "/".join(METHODS))
        return True
    except AzureError as error:
        log.warning("could not give Azurite's blobs a CORS rule (%s): the browser view cannot show logs",
                    type(error).__name__)
        return False


def _same(rule, wanted) -> bool:
    return all(sorted(_words(getattr(rule, field))) == sorted(_words(getattr(wanted, field)))
               for field in ("allowed_origins", "allowed_methods", "allowed_headers", "exposed_headers"))


def _words(value) -> list[str]:
    """A rule's list as written, or as read back (one comma-separated string)."""
    return [word.strip() for word in (value.split(",") if isinstance(value, str) else value or []) if word.strip()]
