"""The providers of a deployment, by providerId (a pool names its provider by id, as in
Taskcluster, and each id is served by one provider of some type).

- `static`, always;
- `local`, where workers may be processes beside the app (`make run`, the tests): on unless
  WORKER_MANAGER_LOCAL_PROVIDER says `false`, and off by default in Azure (where an app's
  instance is no place for workers);
- `azure-container-apps`, when WORKER_MANAGER_ACA_JOB_NAME is set (infra/worker-manager.bicep
  sets it with the other WORKER_MANAGER_ACA_* settings);
- `null-provider`, Taskcluster's: what a deleted pool names; it starts nothing and is not
  listed by listProviders.
"""

from __future__ import annotations

import logging
from typing import Mapping, Sequence

from shared.domain.errors import InputError, NotFound
from shared.domain.worker_pools import NULL_PROVIDER, WorkerPool
from shared.providers.base import (
    Provider, StartedWorker, StartRefused, WorkerHealth, WorkerLaunch, WorkerRef,
)
from shared.providers.static import StaticProvider

log = logging.getLogger("worker_manager.providers")


class NullProvider(Provider):
    """A deleted pool's: nothing is started; its workers stay with the providers that started them."""

    provider_type = "null"
    starts_workers = False

    def start_worker(self, pool: WorkerPool, launch: WorkerLaunch) -> StartedWorker:
        raise StartRefused(f"pool {pool.worker_pool_id} is being deleted")

    def stop_worker(self, worker: WorkerRef) -> None:
        pass

    def check_workers(self, workers: Sequence[WorkerRef]) -> dict[WorkerRef, WorkerHealth]:
        return {worker: WorkerHealth.ALIVE for worker in workers}


class Providers:
    def __init__(self, providers: Mapping[str, Provider]) -> None:
        self._providers = dict(providers)
        self._providers.setdefault(NULL_PROVIDER, NullProvider())

    @classmethod
    def from_settings(cls, environ: Mapping[str, str], root_url: str, worker_environment: Mapping[str, str]
                      ) -> Providers:
        """The deployment's providers (see the module's docstring). `worker_environment`: what
        the local provider adds to its workers' environment (the event broker)."""
        providers: dict[str, Provider] = {"static": StaticProvider()}
        local = environ.get("WORKER_MANAGER_LOCAL_PROVIDER", "").strip().lower()
        if local == "true" or (local != "false" and "WEBSITE_INSTANCE_ID" not in environ):
            from shared.providers.local import LocalProvider
            providers["local"] = LocalProvider(environment=worker_environment)
        if environ.get("WORKER_MANAGER_ACA_JOB_NAME"):
            from shared.providers.azure_container_apps import ContainerAppsProvider
            providers["azure-container-apps"] = ContainerAppsProvider.from_settings(environ)
        log.info("worker manager providers: %s (workers reach the app at %s)", ", ".join(sorted(providers)), root_url)
        return cls(providers)

    def get(self, provider_id: str) -> Provider | None:
        return self._providers.get(provider_id)

    def for_pool(self, provider_id: str) -> Provider:
        """The provider a pool may name; InputError ("Invalid Provider", as Taskcluster's) if none."""
        provider = self._providers.get(provider_id)
        if provider is None:
            valid = ", ".join(sorted(self._providers))
            raise InputError(f"Invalid Provider: providerId {provider_id!r} is not one of {valid}")
        return provider

    def of_worker(self, provider_id: str) -> Provider:
        """The provider that started a worker; NotFound (as Taskcluster's) if it is gone."""
        provider = self._providers.get(provider_id)
        if provider is None:
            raise NotFound(f"Provider {provider_id} for this worker does not exist")
        return provider

    def starts_workers(self, provider_id: str) -> bool:
        provider = self._providers.get(provider_id)
        return provider is not None and provider.starts_workers

    def listed(self) -> list[dict]:
        """listProviders: every provider a pool may name but the null provider, by id."""
        return [{"providerId": provider_id, "providerType": provider.provider_type}
                for provider_id, provider in sorted(self._providers.items()) if provider_id != NULL_PROVIDER]

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
