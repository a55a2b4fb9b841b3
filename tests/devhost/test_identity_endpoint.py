"""The stand-in for App Service's managed identity endpoint: azure-identity's own credentials
sign in through it, as in Azure, and what it refuses."""

import requests
from azure.identity import DefaultAzureCredential, ManagedIdentityCredential

from devhost.azurite_tokens import STORAGE_SCOPE, claims_of
from devhost.identity_endpoint import IdentityEndpoint


def test_azure_identitys_credentials_sign_in_through_it(monkeypatch):
    with IdentityEndpoint() as endpoint:
        for name in ("MSI_ENDPOINT", "MSI_SECRET", "IDENTITY_SERVER_THUMBPRINT", "AZURE_CLIENT_ID"):
            monkeypatch.delenv(name, raising=False)
        for name, value in endpoint.environment.items():
            monkeypatch.setenv(name, value)
        token = ManagedIdentityCredential().get_token(STORAGE_SCOPE)
        claims = claims_of(token.token)
        assert claims["aud"] == "https://storage.azure.com" and claims["oid"] == endpoint.credential.object_id
        default = DefaultAzureCredential(exclude_environment_credential=True, exclude_workload_identity_credential=True)
        assert claims_of(default.get_token(STORAGE_SCOPE).token)["oid"] == endpoint.credential.object_id


def test_a_request_without_its_header_or_resource_is_refused():
    with IdentityEndpoint() as endpoint:
        plain = requests.get(endpoint.url, params={"api-version": "2019-08-01", "resource": "https://storage.azure.com"})
        assert plain.status_code == 401
        no_resource = requests.get(endpoint.url, params={"api-version": "2019-08-01"},
                                   headers={"X-IDENTITY-HEADER": endpoint.header})
        assert no_resource.status_code == 400
