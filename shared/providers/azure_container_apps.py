"""The `azure-container-apps` provider: one Azure Container Apps job execution per worker.

The job (infra/worker-manager.bicep) has a manual trigger and runs the worker image; each
worker is one execution, started through ARM with the execution's template overriding the
container's environment with the worker's registration (and, if the pool says so, its
image, CPU and memory). The Function App signs in with its managed identity
(`azure-identity`), whose role may start, read and stop this job's executions and nothing
else.

Starting twice is what this module is most careful about. ARM may answer a start with a 5xx
or drop the connection after it has created the execution, and azure-core would send the
POST again by itself (it retries POSTs on 500, 503, 504). So the SDK's own retries are off,
and this module retries: a 429 was not carried out, and is sent again after its Retry-After
(when that is short); after anything ambiguous, the job's executions are listed first, and
one that carries the worker's id in its environment is the worker, not a reason to start
another. Were ARM to list an execution only after that look (its reads are eventually
consistent), the second execution's registration token is spent already: it cannot
register, exits, and `check_workers` stops extra executions of one worker on sight.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError, ServiceRequestError, ServiceResponseError
from azure.mgmt.appcontainers import ContainerAppsAPIClient
from azure.mgmt.appcontainers.models import (
    ContainerResources, EnvironmentVar, JobExecutionContainer, JobExecutionTemplate,
)

from shared.domain.worker_pools import WorkerPool

from shared.providers.base import (
    ENV_WORKER_ID, Provider, ProviderError, ProviderUnavailable, QuotaExceeded, StartedWorker, StartRefused,
    WorkerHealth, WorkerLaunch, WorkerRef,
)

log = logging.getLogger(__name__)

_QUOTA_CODE = re.compile(r"quota|limit", re.IGNORECASE)
_HEALTH = {"Running": WorkerHealth.ALIVE, "Processing": WorkerHealth.STARTING, "Unknown": WorkerHealth.STARTING}
# Anything else (Succeeded, Failed, Stopped, Degraded: the job's replica retry limit is 0) is gone.


def make_client(credential, subscription_id: str, base_url: str | None = None, polling_interval: float = 1.0,
                **transport) -> ContainerAppsAPIClient:
    """The SDK's client with its retries off (this provider retries, knowing which calls are
    safe to repeat), polling a long-running operation every `polling_interval` seconds
    unless ARM says otherwise. `transport`: e.g. `connection_verify` (a CA bundle)."""
    return ContainerAppsAPIClient(credential, subscription_id, base_url=base_url, retry_total=0,
                                  polling_interval=polling_interval, **transport)


def classify(error: Exception) -> ProviderError:
    """ARM's answer as quota / refused / transient."""
    if isinstance(error, (ServiceRequestError, ServiceResponseError)):
        return ProviderUnavailable(f"ARM unreachable: {error}")
    status = getattr(getattr(error, "response", None), "status_code", None)
    code = getattr(getattr(error, "error", None), "code", None) or ""
    message = f"ARM answered {status} {code}: {getattr(error, 'message', error)}".strip()
    details = {"status": status, "code": code}
    if status is None or status == 429 or status >= 500:
        retry_after = error.response.headers.get("Retry-After") if status is not None else None
        return ProviderUnavailable(message, retry_after=_seconds(retry_after), details=details)
    if _QUOTA_CODE.search(code):
        return QuotaExceeded(message, details=details)
    return StartRefused(message, details=details)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class ContainerAppsProvider(Provider):
    provider_type = "azure-container-apps"

    def __init__(self, client: ContainerAppsAPIClient, *, resource_group: str, job_name: str, worker_group: str,
                 image: str, container_name: str = "worker", attempts: int = 3, longest_wait: float = 10.0,
                 start_timeout: float = 60.0, sleep: Callable[[float], None] = time.sleep):
        """`worker_group`: the workers' group (Taskcluster uses the cloud's region);
        `longest_wait`: the longest Retry-After waited for within one call (beyond it the
        error goes to the provisioner, which backs the pool off)."""
        self.client = client
        self.resource_group, self.job_name, self.worker_group = resource_group, job_name, worker_group
        self.image, self.container_name = image, container_name
        self.attempts, self.longest_wait, self.start_timeout, self._sleep = attempts, longest_wait, start_timeout, sleep

    @classmethod
    def from_settings(cls, settings: Mapping[str, str], credential=None, **options) -> ContainerAppsProvider:
        """From the app settings infra/worker-manager.bicep sets: WORKER_MANAGER_ACA_SUBSCRIPTION_ID,
        _RESOURCE_GROUP, _JOB_NAME, _LOCATION, _IMAGE; signed in as the app's managed identity."""
        if credential is None:
            from azure.identity import ManagedIdentityCredential
            credential = ManagedIdentityCredential()
        client = make_client(credential, settings["WORKER_MANAGER_ACA_SUBSCRIPTION_ID"])
        return cls(client, resource_group=settings["WORKER_MANAGER_ACA_RESOURCE_GROUP"],
                   job_name=settings["WORKER_MANAGER_ACA_JOB_NAME"],
                   worker_group=settings["WORKER_MANAGER_ACA_LOCATION"],
                   image=settings["WORKER_MANAGER_ACA_IMAGE"], **options)

    # --- starting

    def template(self, pool: WorkerPool, launch: WorkerLaunch) -> JobExecutionTemplate:
        container = dict(pool.pool_config.provider_settings.get("container", {}))
        resources = None
        if "cpu" in container or "memory" in container:
            resources = ContainerResources(cpu=container.get("cpu"), memory=container.get("memory"))
        env = [EnvironmentVar(name=name, value=value) for name, value in launch.registration.environment().items()]
        return JobExecutionTemplate(containers=[JobExecutionContainer(
            name=self.container_name, image=container.get("image", self.image), env=env, resources=resources)])

    def start_worker(self, pool: WorkerPool, launch: WorkerLaunch) -> StartedWorker:
        template = self.template(pool, launch)
        for attempt in range(1, self.attempts + 1):
            try:
                name = self._start_once(template)
                return self._started(launch, name)
            except (HttpResponseError, ServiceRequestError, ServiceResponseError, _StillStarting) as raw:
                error = raw.error if isinstance(raw, _StillStarting) else classify(raw)
                if not isinstance(error, ProviderUnavailable):
                    raise error from None
                throttled = error.details.get("status") == 429
                if not throttled:   # the start may have been carried out: look before starting again
                    found = self._executions().get(launch.worker_id)
                    if found:
                        log.info("azure-container-apps: worker %s was started after all (%s)", launch.worker_id,
                                 error.message)
                        return self._started(launch, found[0]["name"])
                self._wait_before_retry(error, attempt, launch.worker_id)
        raise AssertionError("unreachable")

    def _start_once(self, template: JobExecutionTemplate) -> str:
        poller = self.client.jobs.begin_start(self.resource_group, self.job_name, template)
        execution = poller.result(timeout=self.start_timeout)
        if not poller.done():
            raise _StillStarting(ProviderUnavailable(f"ARM did not finish the start within {self.start_timeout} s"))
        return execution.name

    def _started(self, launch: WorkerLaunch, execution_name: str) -> StartedWorker:
        log.info("azure-container-apps: worker %s is execution %s of job %s", launch.worker_id, execution_name,
                 self.job_name)
        return StartedWorker(launch.worker_id, {"resourceGroup": self.resource_group, "jobName": self.job_name,
                                                "executionName": execution_name})

    def _wait_before_retry(self, error: ProviderError, attempt: int, worker_id: str) -> None:
        wait = error.retry_after if error.retry_after is not None else 0.5 * 2 ** (attempt - 1)
        if attempt == self.attempts or wait > self.longest_wait:
            raise error
        log.info("azure-container-apps: %s for worker %s; trying again in %.1f s", error.message, worker_id, wait)
        self._sleep(wait)

    # --- looking

    def _executions(self) -> dict[str, list[dict[str, Any]]]:
        """The job's executions by the worker id in their environment, most recent first."""
        listed = self._repeating(lambda: list(self.client.jobs_executions.list(self.resource_group, self.job_name)))
        by_worker: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for execution in sorted(listed, key=lambda e: str(e.start_time or ""), reverse=True):
            for container in (execution.template.containers if execution.template else None) or []:
                for variable in container.env or []:
                    if variable.name == ENV_WORKER_ID:
                        by_worker[variable.value].append({"name": execution.name, "status": execution.status})
        return by_worker

    def _repeating(self, call: Callable[[], Any]) -> Any:
        """A read or an idempotent action, tried again on transient errors."""
        for attempt in range(1, self.attempts + 1):
            try:
                return call()
            except (HttpResponseError, ServiceRequestError, ServiceResponseError) as raw:
                error = classify(raw)
                if not isinstance(error, ProviderUnavailable):
                    raise error from None
                self._wait_before_retry(error, attempt, "-")

    def check_workers(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, WorkerHealth]:
        executions = self._executions()
        health = {}
        for worker in workers:
            found = executions.get(worker.worker_id, [])
            mine = worker.provider_data.get("executionName") or (found[0]["name"] if found else None)
            status = next((e["status"] for e in found if e["name"] == mine), None)
            health[worker] = _HEALTH.get(status, WorkerHealth.GONE)
            for extra in found:
                if extra["name"] != mine and _HEALTH.get(extra["status"]) is not None:
                    self._stop_extra(worker, extra["name"])
        return health

    def _stop_extra(self, worker: WorkerRef, name: str) -> None:
        """A second execution of one worker cannot register (its token is spent); stopping it
        is tidiness, and failing to is no reason to withhold the health of the others."""
        log.warning("azure-container-apps: worker %s has a second execution %s: stopping it", worker.worker_id, name)
        try:
            self._stop_execution(name)
        except ProviderError as error:
            log.warning("azure-container-apps: could not stop execution %s (%s); the next check tries again",
                        name, error.message)

    # --- stopping

    def stop_worker(self, worker: WorkerRef) -> None:
        name = worker.provider_data.get("executionName")
        names = [name] if name else [e["name"] for e in self._executions().get(worker.worker_id, [])]
        for name in names:
            log.info("azure-container-apps: stopping worker %s (execution %s)", worker.worker_id, name)
            self._stop_execution(name)

    def _stop_execution(self, name: str) -> None:
        def stop():
            try:
                self.client.jobs.begin_stop_execution(self.resource_group, self.job_name, name).result(
                    timeout=self.start_timeout)
            except ResourceNotFoundError:
                pass   # gone already
        self._repeating(stop)

    def close(self) -> None:
        self.client.close()


class _StillStarting(Exception):
    """The start's long-running operation outlived `start_timeout`: ambiguous, like a 5xx."""

    def __init__(self, error: ProviderError):
        super().__init__(error.message)
        self.error = error
