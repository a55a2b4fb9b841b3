"""The provisioner's tests start workers through the providers the provider tests exercise:
the Container Apps provider signed in to the local stand-in for ARM, and a stand-in worker."""

from tests.providers.conftest import arm, provider, waits  # noqa: F401  (fixtures shared with tests/providers)
