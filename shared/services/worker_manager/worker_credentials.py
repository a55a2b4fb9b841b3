"""registerWorker and reregisterWorker: a worker trades a proof of who it is for temporary
Taskcluster credentials for its pool, as Taskcluster's worker-manager hands them out.

The proof (see `registration`): the single-use token our provider put in a started
worker's environment, spent by the same conditional write that makes the worker `running`
(of two registrations with one token exactly one wins), or a static worker's secret. The
answer carries a new secret, kept as a digest, which reregisterWorker wants next and
replaces; the credentials last until the pool's reregistrationTimeout, which is also when
the worker must have reregistered.

The credentials are named `worker/<providerId>/<workerPoolId>/<workerGroup>/<workerId>`,
signed by the queue's credentials client (as claimWork's are), with the worker's scopes
(`domain.workers.credentials_scopes`). Nothing presented or issued is logged.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta

from shared.domain.errors import InputError, NotFound
from shared.domain.timestamps import parse_iso, to_iso
from shared.domain.worker_pools import Lifecycle, WorkerPool
from shared.domain.worker_manager_events import WORKER_RUNNING
from shared.domain.workers import WorkerState, credentials_client_id, credentials_scopes
from shared.services.claims.credentials import CredentialIssuer
from shared.providers.registry import Providers
from shared.providers.static import StaticProvider
from shared.domain.registration import (
    RegistrationRefused, RegistrationToken, digest, new_secret, redeem_token, secret_matches,
)
from shared.services.worker_manager.worker_pools import WorkerPools
from shared.services.worker_manager.worker_states import STOPPED_KEPT, WorkerStates
from shared.storage.errors import ChangedSinceRead
from shared.storage.tables.pool_worker_table import PoolWorkerRecord

log = logging.getLogger("worker_manager.registration")
NOT_FOR_THIS_SECRET = "Could not generate credentials for this secret"


class WorkerCredentials:
    def __init__(self, states: WorkerStates, pools: WorkerPools, providers: Providers,
                 issuer: CredentialIssuer) -> None:
        self.states = states
        self.pools = pools
        self.providers = providers
        self.issuer = issuer

    def register(self, body: dict, now: datetime) -> dict:
        pool_id, provider_id = body["workerPoolId"], body["providerId"]
        group, worker_id, proof = body["workerGroup"], body["workerId"], body["workerIdentityProof"]
        pool = self.pools.load(pool_id).pool
        provider = self.providers.get(provider_id)
        if provider is None:
            raise NotFound(f"Provider {provider_id} does not exist")
        if provider_id != pool.provider_id and provider_id not in pool.previous_provider_ids:
            raise InputError(f"Worker pool {pool_id} not associated with provider {provider_id}")
        worker = self.states.load(pool_id, group, worker_id)
        if worker is None:
            raise NotFound(f"Worker {group}/{worker_id} in worker pool {pool_id} does not exist")
        if parse_iso(worker.expires) <= now:
            raise InputError(f"Worker {group}/{worker_id} has expired")
        if worker.provider_id != provider_id:
            raise InputError(f"Worker {group}/{worker_id} does not have provider {provider_id}")
        secret = new_secret()
        expires = now + timedelta(seconds=self._lifecycle(pool).reregistration_timeout)
        changes = {"secret_digest": digest(secret), "terminate_after": to_iso(expires),
                   "expires": to_iso(expires + STOPPED_KEPT)}
        if isinstance(provider, StaticProvider):   # its people set when it expires
            StaticProvider.verify_registration(worker.state, worker.provider_data, proof, worker.name)
            del changes["expires"]
            self.states.change(worker, lambda current: replace(current, **changes))
        else:
            self._redeem(worker, proof, now, changes)
        log.info("worker %s registered", worker.name,
                 extra={"workerPoolId": pool_id, "workerId": worker_id, "action": "register"})
        return {"expires": to_iso(expires), "credentials": self._credentials(worker, now, expires),
                "workerConfig": _worker_config(pool, provider.starts_workers), "secret": secret}

    def _redeem(self, worker: PoolWorkerRecord, proof: dict, now: datetime, changes: dict) -> None:
        """Spend the worker's token and make it running, in one write conditional on the
        record exactly as read: a record changed since (another registration with the same
        token, a removal) refuses this one."""
        if "token" not in proof:
            raise RegistrationRefused("missing token in workerIdentityProof")
        record = RegistrationToken.from_json(worker.token) if worker.token else None

        def mark_used(used: RegistrationToken) -> bool:   # the token held: what of the worker?
            if worker.state is not WorkerState.REQUESTED:
                raise RegistrationRefused(f"Worker {worker.name} is {worker.state.value}: it cannot register")
            running = self.states.announced(replace(
                worker, state=WorkerState.RUNNING, token=used.to_json(), last_modified=to_iso(now),
                last_checked=to_iso(now), **changes), WORKER_RUNNING, now)
            try:
                saved = self.states.table.save(running)
            except ChangedSinceRead:
                return False
            self.states.publisher.written(self.states.table, saved)
            return True
        redeem_token(record, proof["token"], worker_pool_id=worker.worker_pool_id, worker_group=worker.worker_group,
                     worker_id=worker.worker_id, now=now, mark_used=mark_used)

    def reregister(self, body: dict, now: datetime) -> dict:
        pool_id, group, worker_id, secret = body["workerPoolId"], body["workerGroup"], body["workerId"], body["secret"]
        worker = self.states.load(pool_id, group, worker_id)
        new = new_secret()
        pool = self.pools.find(pool_id)
        expires = now + timedelta(seconds=self._lifecycle(pool.pool if pool else None).reregistration_timeout)

        def renewed(current: PoolWorkerRecord) -> PoolWorkerRecord:
            if not current.secret_digest or not secret_matches(secret, current.secret_digest):
                raise InputError(NOT_FOR_THIS_SECRET)
            if current.state is not WorkerState.RUNNING:
                raise InputError(f"Worker {group}/{worker_id} is not running")
            if parse_iso(current.expires) <= now:
                raise InputError(f"Worker {group}/{worker_id} has expired")
            renewed = replace(current, secret_digest=digest(new), terminate_after=to_iso(expires))
            if self.providers.starts_workers(current.provider_id):   # a static one's people set its expiry
                renewed = replace(renewed, expires=to_iso(expires + STOPPED_KEPT))
            return renewed
        if worker is None:
            raise InputError(NOT_FOR_THIS_SECRET)
        worker = self.states.change(worker, renewed)
        log.info("worker %s reregistered", worker.name,
                 extra={"workerPoolId": pool_id, "workerId": worker_id, "action": "reregister"})
        return {"expires": to_iso(expires), "credentials": self._credentials(worker, now, expires), "secret": new}

    def _credentials(self, worker: PoolWorkerRecord, now: datetime, expires: datetime) -> dict:
        name = credentials_client_id(worker.provider_id, worker.worker_pool_id, worker.worker_group, worker.worker_id)
        return self.issuer.issue(name, credentials_scopes(worker.worker_pool_id, worker.worker_group,
                                                          worker.worker_id), now, expires)

    @staticmethod
    def _lifecycle(pool: WorkerPool | None) -> Lifecycle:
        return Lifecycle.from_json(pool.config.get("lifecycle") if pool else None)


def _worker_config(pool: WorkerPool, started: bool) -> dict:
    """The pool's workerConfig, with our defaults for the workers our providers start (a
    static worker's people decide when it stops: it gets the config as written)."""
    return dict(pool.pool_config.worker_config) if started else dict(pool.config.get("workerConfig", {}))
