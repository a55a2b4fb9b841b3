"""Fixtures shared by the whole suite: a real Azurite, the real local Functions host, and
the official Taskcluster client pointed at it. Nothing here is a mock.

Every test run starts its own Azurite on free ports (so it never meets a `make run`), and
every server gets its own table prefix, so servers never see each other's rows.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import subprocess
import threading
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
import taskcluster

from devhost.azurite import Azurite
from devhost.azurite_tokens import AzuriteCredential
from devhost.identity_endpoint import IdentityEndpoint
from devhost.processes import free_port
from devhost.rabbitmq import RabbitMQ
from devhost.throttling.proxy import ThrottlingProxy
from devhost.throttling.targets import Throttle
from shared.config import Settings
from shared.domain.ids import new_slugid
from shared.domain.timestamps import to_iso, utcnow
from shared.services.secrets.encryption import new_key_entry
from shared.services.wiring import Services
from shared.storage.client.account import StorageAccount
from tests.memory_bus import MemoryBus
from tests.memory_storage import MemoryAccount
from tests.signing import HawkAuth

ROOT = Path(__file__).resolve().parent.parent
# Every test server trusts this client with `*` (STATIC_CLIENTS), and its clients use it.
ROOT_CREDENTIALS = {"clientId": "static/tests-root", "accessToken": secrets.token_urlsafe(33)}
# Every test server seals secrets (the secrets service's, a hook's trigger token) under this key
# (a fresh one per test run).
SECRETS_KEYS = new_key_entry("tests")


def unique_prefix() -> str:
    return "t" + uuid.uuid4().hex[:10]


def as_members(task_ids, deadline: str = "2030-01-01T00:00:00.000Z", expires: str = "2031-01-01T00:00:00.000Z") -> dict:
    """What `TaskGroupTable.add_members` takes of new tasks (taskId -> definition), for
    tests of the group's rows alone."""
    return {task_id: {"deadline": deadline, "expires": expires, "dependencies": []} for task_id in task_ids}


def meanwhile(action):
    """What `action` answers, run as another process would run it at this moment: in a thread
    of its own. A test's hook may run in one of the process's pools (`runtime/thread_pools`),
    whose threads may not wait on the pools that `action` uses."""
    outcome: list = []

    def act() -> None:
        try:
            outcome.append((True, action()))
        except BaseException as error:   # raised again in the test's thread
            outcome.append((False, error))
    thread = threading.Thread(target=act, name="meanwhile")
    thread.start()
    thread.join()
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value


def eventually(probe, timeout: float = 10, interval: float = 0.05, message: str = "condition"):
    """Call `probe` until it returns something truthy and return that; fail after `timeout` s
    (saying `message`, or what `message()` says then). Tests poll with a bound instead of
    sleeping a fixed time."""
    give_up = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > give_up:
            message = message() if callable(message) else message
            raise AssertionError(f"{message} not reached within {timeout} s (last value: {value!r})")
        time.sleep(interval)


@pytest.fixture(autouse=True)
def resolutions_finished():
    """Each test's resolutions are finished before the next test begins: their group's count
    is asked about 10 ms after a bucket empties (`storage.countdown`), and a request made then
    would be counted in the next test's figures (`OPERATIONS` counts the whole process)."""
    yield
    from shared.services.dependencies.dependency_resolver import DependencyResolver
    DependencyResolver.settled(timeout=10)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    instance = Azurite()
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(scope="session")
def oauth_azurite():
    """An Azurite that checks bearer tokens (`--oauth basic`, over HTTPS with a certificate
    made at its start: `oauth_azurite.certificate`, which clients pass as `connection_verify`)."""
    with Azurite(oauth=True) as instance:
        yield instance


@pytest.fixture
def storage_credential() -> AzuriteCredential:
    """What stands for the app's managed identity: tokens `oauth_azurite` takes."""
    return AzuriteCredential()


@pytest.fixture(scope="session")
def identity_endpoint():
    """App Service's managed identity endpoint, as a process finds it through IDENTITY_ENDPOINT
    and IDENTITY_HEADER, handing out tokens `oauth_azurite` takes (`devhost.identity_endpoint`)."""
    with IdentityEndpoint() as endpoint:
        yield endpoint


def identity_properties(azurite: Azurite) -> dict[str, str]:
    """The AzureWebJobsStorage__<property> settings of an app that reaches `azurite` (in OAuth
    mode) with its managed identity, as Bicep sets them in Azure but with the emulator's URLs."""
    return {"blobServiceUri": azurite.endpoint("blob"), "queueServiceUri": azurite.endpoint("queue"),
            "tableServiceUri": azurite.endpoint("table"), "credential": "managedidentity"}


def identity_environment(azurite: Azurite, endpoint: IdentityEndpoint) -> dict[str, str]:
    """What a process signing in with that identity needs besides: the identity endpoint (as
    App Service gives it) and the emulator's certificate to trust."""
    return {**endpoint.environment, "REQUESTS_CA_BUNDLE": str(azurite.certificate)}


def identity_account(azurite: Azurite, endpoint: IdentityEndpoint, monkeypatch, prefix: str = "") -> StorageAccount:
    """A storage account of this process on `azurite`, reached with the managed identity only."""
    for name, value in identity_environment(azurite, endpoint).items():
        monkeypatch.setenv(name, value)
    return StorageAccount("", prefix or unique_prefix(), identity=identity_properties(azurite))


@pytest.fixture
def own_azurite():
    """An empty Azurite of the test's own, for tests of hundreds of tasks. Azurite's cost per
    operation grows with the rows it holds (it scans a partition, or a whole table, for most
    look-ups), so such a test run after the rest of the suite on the session's Azurite took
    eight times as long as on its own (the SIGKILL suite: 330 s against 40 s)."""
    with Azurite() as instance:
        yield instance


@pytest.fixture
def own_server(own_azurite, tmp_path):
    """A host on `own_azurite`."""
    instance = start_server(own_azurite, tmp_path)
    yield instance
    instance.stop()


@pytest.fixture
def throttling(azurite):
    """`throttling(scale, timeouts=0.0)`: Azure's throttling (`devhost.throttling`, in this
    process) in front of the session's Azurite; `proxy.connection_string(azurite.connection_string)`
    goes through it, and `proxy.throttle` counts (and can be armed)."""
    proxies = []

    def start(scale: float, timeouts: float = 0.0) -> ThrottlingProxy:
        proxy = ThrottlingProxy(azurite.ports, Throttle(scale, timeouts, seed=0)).start()
        proxies.append(proxy)
        return proxy
    yield start
    for proxy in proxies:
        proxy.stop()


_broker: RabbitMQ | None = None


def shared_broker() -> RabbitMQ:
    """The test run's RabbitMQ (started on first use, on free ports), where servers publish."""
    global _broker
    if _broker is None:
        _broker = RabbitMQ().start()
        atexit.register(_broker.stop)   # benchmarks use it too, without pytest's session end
    return _broker


@pytest.fixture(scope="session")
def broker() -> RabbitMQ:
    return shared_broker()


def pytest_collection_modifyitems(items):
    """Tests marked `slow` (those of half a minute or more) first: the workers then start on
    them and share the short ones at the end, instead of one worker finishing a long test
    alone while the other has nothing left (`--dist worksteal` steals from the tail)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session, exitstatus):
    if _broker is not None:
        _broker.stop()


@dataclass
class Server:
    """A local Functions host serving function_app.py in its own process."""

    root_url: str
    process: subprocess.Popen
    env: dict
    log_path: Path
    credentials: dict = field(default_factory=lambda: dict(ROOT_CREDENTIALS))

    def client(self, **options) -> taskcluster.Queue:
        """The official client, with the root client's credentials unless `credentials` says."""
        return taskcluster.Queue({"rootUrl": self.root_url, "maxRetries": 0, "credentials": dict(self.credentials),
                                  **options})

    @property
    def auth(self) -> HawkAuth:
        """Signs a raw `requests` call with the root client's credentials."""
        return HawkAuth(self.credentials)

    def url(self, path: str) -> str:
        return f"{self.root_url}/api/queue/v1{path}"

    def stop(self, sig_kill: bool = False) -> None:
        if self.process.poll() is None:
            self.process.kill() if sig_kill else self.process.terminate()
            self.process.wait(timeout=20)


def start_server(azurite: Azurite, log_dir: Path, tree: Path = ROOT, **settings: str) -> Server:
    """A host on `azurite`, run from the source tree `tree` (this one, or another checkout
    to compare with: `bench.trees`); on another port if the one chosen was taken before the
    host bound it (a free port is one the kernel may also give an outgoing connection meanwhile)."""
    for attempt in range(3):
        try:
            return _start_server(azurite, log_dir, free_port(), settings, tree)
        except PortTaken:
            if attempt == 2:
                raise


class PortTaken(RuntimeError):
    pass


def storage_names(prefix: str) -> dict[str, str]:
    """The settings that name a deployment's tables, queues and container: hosts given the
    same are instances of one Function App on one storage account."""
    return {"QUEUE_TABLE_PREFIX": prefix, "QUEUE_RESOLVED_QUEUE": f"{prefix}-resolved",
            "QUEUE_REPAIR_QUEUE": f"{prefix}-repairs", "QUEUE_GRAPH_QUEUE": f"{prefix}-graphs",
            "QUEUE_ARTIFACTS_CONTAINER": f"{prefix}-artifacts", "WORKER_MANAGER_QUEUE": f"{prefix}-wm"}


def start_instances(azurite: Azurite, log_dir: Path, count: int, **settings: str) -> list[Server]:
    """`count` hosts on `azurite` sharing its tables and queues (one Function App scaled out
    to `count` instances), started at once."""
    shared = {**storage_names(unique_prefix()), **settings}
    shared_broker()   # started from this thread: it dies with the thread that started it (die_with_parent)
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: start_server(azurite, log_dir, **shared), range(count)))


def _start_server(azurite: Azurite, log_dir: Path, port: int, settings: dict, tree: Path = ROOT) -> Server:
    env = {
        **os.environ,
        "AzureWebJobsStorage": azurite.connection_string,
        **storage_names(unique_prefix()),
        "QUEUE_REPAIR_DELAY_SECONDS": "2",
        "QUEUE_REPAIR_SCHEDULE": "*/1 * * * * *",
        "QUEUE_CLAIM_RESOLVER_SCHEDULE": "*/1 * * * * *",
        "QUEUE_DEADLINE_RESOLVER_SCHEDULE": "*/1 * * * * *",
        "QUEUE_EXPIRATION_SCHEDULE": "*/1 * * * * *",
        "QUEUE_WATCHDOG_SCHEDULE": "*/1 * * * * *",
        "HOOKS_SCHEDULER_SCHEDULE": "*/1 * * * * *",
        "WORKER_MANAGER_PROVISIONER_SCHEDULE": "*/2 * * * * *",
        "CLAIM_WORK_WAIT_SECONDS": "2",
        "EVENTS_AMQP_URL": shared_broker().url,
        "QUEUE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "STATIC_CLIENTS": json.dumps([{**ROOT_CREDENTIALS, "scopes": ["*"]}]),
        "SECRETS_ENCRYPTION_KEYS": SECRETS_KEYS,
        **settings,
    }
    server = Server(f"http://127.0.0.1:{port}", launch_host(port, env, log_dir / f"devhost-{port}.log", tree, tree),
                    env, log_dir / f"devhost-{port}.log")
    _wait_until_up(server)
    return server


def restart_server(server: Server) -> None:
    """Start the host again on the same port, storage and settings (after `server.stop`)."""
    server.process = launch_host(int(server.root_url.rsplit(":", 1)[1]), server.env, server.log_path)
    _wait_until_up(server)


def launch_host(port: int, env: dict, log_path: Path, app_dir: Path = ROOT, tree: Path = ROOT) -> subprocess.Popen:
    """`python -m devhost` (of the source tree `tree`) serving `app_dir` on storage that `env`
    names, without waiting."""
    return subprocess.Popen(
        [sys.executable, "-m", "devhost", "--app-dir", str(app_dir), "--port", str(port), "--azurite", "none",
         "--broker", "none"],
        cwd=tree, env=env, stdout=log_path.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_until_up(server: Server, timeout: float = 60) -> None:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if server.process.poll() is not None:
            log = server.log_path.read_text()
            raise (PortTaken if "Address already in use" in log[-3000:] else RuntimeError)(
                f"the local host exited: {log[-3000:]}")
        try:
            if requests.get(server.url("/ping"), timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the local host did not answer: {server.log_path.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def server(azurite, tmp_path_factory):
    instance = start_server(azurite, tmp_path_factory.mktemp("server"))
    yield instance
    instance.stop()


@pytest.fixture
def queue(server) -> taskcluster.Queue:
    """The official Taskcluster client, as a user would make it (no retries, to see errors)."""
    return server.client()


def build_services(azurite: Azurite, bus=None, providers=None, **overrides) -> Services:
    """The Queue's services in this process, on Azurite tables and queues of their own,
    publishing events on `bus` (by default one in memory: `services.bus`); the worker
    manager's `providers` when given."""
    prefix = unique_prefix()
    return Services.build(_settings(azurite.connection_string, prefix, overrides), bus=bus or MemoryBus(),
                          providers=providers)


def memory_services(bus=None, feeds=None, account: MemoryAccount | None = None, **overrides) -> Services:
    """The Queue's services in this process, on a storage account in memory, publishing
    events on `bus` (by default one in memory: `services.bus`); the browser's feeds on
    `feeds` (by default none: no bus to follow). The services of another `account`'s
    services stand for a second process on the same storage."""
    account = account or MemoryAccount(unique_prefix())
    return Services.build(_settings("memory", account.prefix, overrides), account=account,
                          bus=bus or MemoryBus(), feeds=feeds)


def two_processes(**overrides) -> tuple[Services, Services]:
    """The services of two processes on one storage account in memory."""
    account = MemoryAccount(unique_prefix())
    return memory_services(account=account, **overrides), memory_services(account=account, **overrides)


def two_processes_on(azurite: Azurite, **overrides) -> tuple[Services, Services]:
    """The services of two processes on one storage of Azurite (tables, queues), each with
    its own memory, publishing on buses in memory."""
    settings = _settings(azurite.connection_string, unique_prefix(), overrides)
    return Services.build(settings, bus=MemoryBus()), Services.build(settings, bus=MemoryBus())


def _settings(connection: str, prefix: str, overrides: dict) -> Settings:
    settings = dict(
        storage_connection=connection, table_prefix=prefix,
        claim_timeout=1200, claim_work_wait=1,
        credentials_client_id="queue", credentials_access_token="test-token",
        resolved_queue=f"{prefix}-resolved", repair_queue=f"{prefix}-repairs", repair_delay=1,
        graph_queue=f"{prefix}-graphs", artifacts_container=f"{prefix}-artifacts", secrets_encryption_keys=SECRETS_KEYS,
        worker_manager_queue=f"{prefix}-wm")
    return Settings(**{**settings, **overrides})


@contextmanager
def follow_ups_lost(services: Services):
    """Within the block, the process 'dies' right after each write that resolves a task:
    the resolution is neither handled in process nor announced."""
    updater = services.task_calls.updater
    real, updater.after_resolution = updater.after_resolution, _NoFollowUp()
    try:
        yield
    finally:
        updater.after_resolution = real


class _NoFollowUp:
    def follow_up(self, resolution) -> None:
        pass


@pytest.fixture
def services() -> Services:
    """The services on an in-memory storage account (see `tests/memory_storage.py`)."""
    return memory_services()


@pytest.fixture
def task_queue_id() -> str:
    """A task queue no other test uses."""
    return f"prov-{uuid.uuid4().hex[:8]}/worker-{uuid.uuid4().hex[:8]}"


def make_task(task_queue_id: str, **overrides) -> dict:
    """A valid task definition, created now with a deadline an hour away."""
    now = utcnow()
    task = {
        "taskQueueId": task_queue_id,
        "created": to_iso(now),
        "deadline": to_iso(now + timedelta(hours=1)),
        "payload": {"command": ["true"]},
        "metadata": {"name": "test task", "description": "made by the test suite",
                     "owner": "tests@example.com", "source": "https://example.com/tests"},
    }
    task.update(overrides)
    return task


@pytest.fixture
def new_task(task_queue_id):
    """A factory: `new_task(**overrides)` gives a fresh definition on this test's queue."""
    return lambda **overrides: make_task(task_queue_id, **overrides)


@pytest.fixture
def task_id() -> str:
    return new_slugid()


@pytest.fixture
def pool_clients(server) -> tuple[taskcluster.WorkerManager, taskcluster.Queue]:
    """The official WorkerManager and Queue clients of the root client (no retries)."""
    options = {"rootUrl": server.root_url, "maxRetries": 0, "credentials": dict(ROOT_CREDENTIALS)}
    return taskcluster.WorkerManager(options), taskcluster.Queue(options)


@pytest.fixture
def local_pool_id(pool_clients):
    """A worker pool id no other test uses; the pool is deleted after the test, and any worker
    process of it that is left is killed."""
    from tests.local_pools import kill_pool_processes
    name = f"local-{uuid.uuid4().hex[:8]}/builds"
    yield name
    try:
        pool_clients[0].deleteWorkerPool(name)
    except taskcluster.exceptions.TaskclusterRestFailure:
        pass
    kill_pool_processes(name)
