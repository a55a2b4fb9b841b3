"""What the provider and provisioner tests share: launches with fresh registrations, a stand-in
worker, and the Container Apps provider signed in to the local stand-in for ARM."""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from azure.identity import ManagedIdentityCredential

from shared.domain.timestamps import utcnow
from shared.domain.worker_pools import WorkerPool
from shared.domain.workers import new_worker_id
from shared.providers.azure_container_apps import ContainerAppsProvider, make_client
from shared.providers.base import Registration, WorkerLaunch, WorkerRef
from shared.domain.registration import issue_token
from tests.conftest import eventually
from tests.providers.arm_stand_in import ArmStandIn

# Until the worker registers (the lead's next phase), any long-running process stands in for it.
SLEEPER = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]
POOL_BODY = {"providerId": "local", "description": "tests", "owner": "tests@example.com", "emailOnError": False,
             "config": {"maxCapacity": 4}}


def environment_of(pid: int) -> dict[str, str]:
    """The environment the process was started with. The kernel shows it once the exec has
    set the new program's stack up, a moment after Popen returns."""
    def read():
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return eventually(read, message=f"the environment of pid {pid}")


def make_launch(pool: WorkerPool, worker_group: str = "local", prefix: str = "local") -> WorkerLaunch:
    worker_id = new_worker_id(prefix)
    token = issue_token(pool.worker_pool_id, worker_group, worker_id, utcnow(), timedelta(minutes=15))
    return WorkerLaunch(Registration("http://127.0.0.1:7071", pool.worker_pool_id, pool.provider_id, worker_group,
                                     worker_id, token.token))


def ref_of(pool: WorkerPool, launch: WorkerLaunch, provider_data=None) -> WorkerRef:
    return WorkerRef(pool.worker_pool_id, launch.registration.worker_group, launch.worker_id, provider_data or {})


@pytest.fixture
def pool() -> WorkerPool:
    return WorkerPool.create("proj/local-tests", POOL_BODY, utcnow())


SUBSCRIPTION = "00000000-0000-0000-0000-00000000000a"


@pytest.fixture
def arm(tmp_path):
    stand_in = ArmStandIn(tmp_path, SLEEPER)
    yield stand_in
    stand_in.close()


@pytest.fixture
def waits():
    return []


@pytest.fixture
def provider(arm, monkeypatch, waits):
    """Signed in as App Service's managed identity would be: IDENTITY_ENDPOINT/IDENTITY_HEADER."""
    for name in ("MSI_ENDPOINT", "MSI_SECRET", "IDENTITY_SERVER_THUMBPRINT", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("IDENTITY_ENDPOINT", arm.identity_endpoint)
    monkeypatch.setenv("IDENTITY_HEADER", arm.identity_header)
    client = make_client(ManagedIdentityCredential(), SUBSCRIPTION, base_url=arm.base_url, polling_interval=0.05,
                         connection_verify=str(arm.cert_path))

    def sleep(seconds):
        waits.append(seconds)
        time.sleep(seconds)
    instance = ContainerAppsProvider(client, resource_group="workers-rg", job_name="workers", worker_group="westeurope",
                                     image="registry.example/taskq-worker:1", sleep=sleep, longest_wait=5)
    yield instance
    instance.close()
