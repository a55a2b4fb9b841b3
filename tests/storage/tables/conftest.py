"""The account the table adapters' tests run on: Azurite, and the in-memory one the service
tests use (each test runs on both, so a behaviour the fake gets wrong fails beside the real)."""

import pytest

from shared.storage.client.account import StorageAccount
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount


@pytest.fixture(params=["azurite", "memory"])
def account(request):
    if request.param == "memory":
        return MemoryAccount(unique_prefix())
    return StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix())
