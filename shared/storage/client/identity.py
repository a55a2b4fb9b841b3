"""A storage account reached with the app's identity instead of a key: where its services
are, and which credential signs in, from the settings the Functions host reads for an
identity-based `AzureWebJobsStorage` connection.

The host takes the connection `AzureWebJobsStorage` as a connection string when that
setting holds one; else as the section `AzureWebJobsStorage__<property>`:
- `accountName`: the account, its services at `https://<name>.<service>.core.windows.net`;
- `blobServiceUri`, `queueServiceUri`, `tableServiceUri`: a service's URL (another cloud, a
  custom domain, an emulator), each winning over the one `accountName` gives;
- `credential` = `managedidentity` (and `clientId` or `managedIdentityResourceId` for a
  user-assigned identity): the Function App's managed identity; `tenantId`, `clientId` and
  `clientSecret`: a service principal; none of these: azure-identity's DefaultAzureCredential
  (a developer's `az login`, the environment's, the managed identity's).
Property names are case-insensitive, as the host's configuration is.

Locally a managed identity is reached as in App Service, through `IDENTITY_ENDPOINT` and
`IDENTITY_HEADER` (`devhost/identity_endpoint.py` serves tokens Azurite takes): no code path
here is a test's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

SETTING = "AzureWebJobsStorage"
SERVICES = ("blob", "queue", "table")
SUFFIX = "core.windows.net"


def identity_settings(settings: Mapping[str, str], name: str = SETTING) -> dict[str, str]:
    """The properties of the connection `name`'s section (`<name>__<property>`), by
    lower-cased property name; empty values left out."""
    prefix = f"{name}__".lower()
    return {key[len(prefix):].lower(): value for key, value in settings.items()
            if key.lower().startswith(prefix) and value}


@dataclass(frozen=True)
class IdentityConnection:
    """The account's service URLs (`blob`, `queue`, `table`) and how to sign in to them."""
    urls: dict[str, str]
    properties: dict[str, str] = field(repr=False, default_factory=dict)

    @classmethod
    def from_settings(cls, properties: Mapping[str, str]) -> IdentityConnection | None:
        """The connection the section's properties describe; None if they name no account
        (no `accountName` nor service URI). ValueError naming what is missing."""
        properties = {key.lower(): value for key, value in properties.items() if value}
        account = properties.get("accountname", "")
        named = {service: properties.get(f"{service}serviceuri", "") for service in SERVICES}
        if not account and not any(named.values()):
            return None
        missing = [service for service in SERVICES if not named[service] and not account]
        if missing:
            raise ValueError(f"{SETTING}__{missing[0]}ServiceUri is not set (nor {SETTING}__accountName): "
                             f"the {missing[0]} service's URL is needed")
        urls = {service: (named[service] or f"https://{account}.{service}.{SUFFIX}").rstrip("/")
                for service in SERVICES}
        insecure = [url for url in urls.values() if not url.lower().startswith("https://")]
        if insecure:
            raise ValueError(f"{insecure[0]}: an identity signs in over HTTPS only")
        return cls(urls, properties)

    @property
    def key(self) -> tuple:
        """What makes two connections the same sign-in (one token per process for each)."""
        return tuple(sorted((name, value) for name, value in self.properties.items()
                            if name in ("credential", "clientid", "tenantid", "managedidentityresourceid")))

    def credential(self):
        """azure-identity's credential the properties name."""
        from azure.identity import ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential

        client_id = self.properties.get("clientid") or None
        if self.properties.get("clientsecret"):
            return ClientSecretCredential(self.properties.get("tenantid", ""), client_id or "",
                                          self.properties["clientsecret"])
        if self.properties.get("credential", "").lower() == "managedidentity":
            resource_id = self.properties.get("managedidentityresourceid")
            if resource_id:
                return ManagedIdentityCredential(identity_config={"mi_res_id": resource_id})
            return ManagedIdentityCredential(client_id=client_id)
        return DefaultAzureCredential(managed_identity_client_id=client_id)
