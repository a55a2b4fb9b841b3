"""A worker the worker manager started: its registration, its credentials kept fresh, and
when it should leave.

Its environment says who it is (`TASKCLUSTER_ROOT_URL`, `TASKQ_WORKER_POOL_ID`,
`TASKQ_PROVIDER_ID`, `TASKQ_WORKER_GROUP`, `TASKQ_WORKER_ID`) and how it proves it
(`TASKQ_REGISTRATION_TOKEN`, single-use). The token is taken out of the environment before
anything else runs, so no task inherits it, and traded through `registerWorker` for
credentials for the pool, which every call then uses; they are renewed through
`reregisterWorker` well before they expire. The worker leaves after `idleTimeoutSecs`
(workerConfig) without work, or when `shouldWorkerTerminate` says so (asked at most every
TERMINATE_POLL seconds), removing itself first so that the pool knows at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import taskcluster

log = logging.getLogger("taskq_worker.managed")
TOKEN = "TASKQ_REGISTRATION_TOKEN"
IDENTITY = ("TASKQ_WORKER_POOL_ID", "TASKQ_PROVIDER_ID", "TASKQ_WORKER_GROUP", "TASKQ_WORKER_ID")
TERMINATE_POLL = 30.0     # seconds between two shouldWorkerTerminate calls
RENEW_AT = 0.75           # of the credentials' lifetime: when they are renewed
RETRY = 30.0              # seconds before a failed renewal is tried again


class RegistrationFailed(Exception):
    pass


@dataclass(frozen=True)
class Identity:
    root_url: str
    worker_pool_id: str
    provider_id: str
    worker_group: str
    worker_id: str


def take_from_environment(environ=os.environ) -> tuple[Identity, str] | None:
    """The worker's identity and its token, the token removed from the environment; None
    when this worker was not started by the worker manager."""
    token = environ.pop(TOKEN, None)
    if token is None:
        return None
    values = [environ.get(name, "") for name in IDENTITY]
    if not all(values) or not environ.get("TASKCLUSTER_ROOT_URL"):
        raise RegistrationFailed(f"{TOKEN} is set but not all of TASKCLUSTER_ROOT_URL, {', '.join(IDENTITY)}")
    return Identity(environ["TASKCLUSTER_ROOT_URL"], *values), token


class ManagedWorker:
    """What the claim loop asks of the worker manager (see `worker.Worker`)."""

    def __init__(self, identity: Identity, clients: list) -> None:
        """`clients`: the Taskcluster clients whose credentials registration sets (the
        worker's Queue client among them)."""
        self.identity = identity
        self.manager = taskcluster.WorkerManager({"rootUrl": identity.root_url})
        self.clients = [self.manager, *clients]
        self.worker_config: dict = {}
        self._secret = ""
        self._expires = 0.0
        self._asked = 0.0
        self._renewer: threading.Thread | None = None

    @property
    def idle_timeout(self) -> float:
        return float(self.worker_config.get("idleTimeoutSecs", 0) or 0)

    def register(self, token: str) -> None:
        ident = self.identity
        try:
            answer = self.manager.registerWorker({
                "workerPoolId": ident.worker_pool_id, "providerId": ident.provider_id,
                "workerGroup": ident.worker_group, "workerId": ident.worker_id, "workerIdentityProof": {"token": token}})
        except taskcluster.exceptions.TaskclusterFailure as failure:
            raise RegistrationFailed(str(failure).splitlines()[0][:300]) from None
        self.worker_config = dict(answer.get("workerConfig") or {})
        self._renewed(answer)
        log.info("registered as %s/%s of %s; idleTimeoutSecs=%s", ident.worker_group, ident.worker_id,
                 ident.worker_pool_id, self.worker_config.get("idleTimeoutSecs"))
        self._renewer = threading.Thread(target=self._keep_renewing, name="reregister", daemon=True)
        self._renewer.start()

    def _renewed(self, answer: dict) -> None:
        credentials = {key: value for key, value in answer["credentials"].items() if value}
        for client in self.clients:
            client.options["credentials"] = dict(credentials)
        self._secret = answer["secret"]
        expires = datetime.fromisoformat(answer["expires"].replace("Z", "+00:00"))
        self._expires = time.time() + (expires - datetime.now(timezone.utc)).total_seconds()

    def _keep_renewing(self) -> None:
        while True:
            lifetime = self._expires - time.time()
            time.sleep(max(1.0, lifetime * RENEW_AT) if lifetime > 0 else RETRY)
            ident = self.identity
            try:
                self._renewed(self.manager.reregisterWorker({
                    "workerPoolId": ident.worker_pool_id, "workerGroup": ident.worker_group,
                    "workerId": ident.worker_id, "secret": self._secret}))
                log.info("credentials renewed")
            except taskcluster.exceptions.TaskclusterFailure as failure:
                log.warning("reregisterWorker failed: %s; trying again in %.0f s", str(failure).splitlines()[0][:200],
                            RETRY)
                time.sleep(RETRY)

    def should_terminate(self) -> bool:
        """Whether the worker manager wants this worker gone (asked every TERMINATE_POLL s)."""
        if time.monotonic() - self._asked < TERMINATE_POLL:
            return False
        self._asked = time.monotonic()
        ident = self.identity
        try:
            answer = self.manager.shouldWorkerTerminate(ident.worker_pool_id, ident.worker_group, ident.worker_id)
        except taskcluster.exceptions.TaskclusterFailure as failure:
            log.warning("shouldWorkerTerminate failed: %s", str(failure).splitlines()[0][:200])
            return False
        if answer.get("terminate"):
            log.info("the worker manager asks this worker to terminate: %s", answer.get("reason"))
        return bool(answer.get("terminate"))

    def leave(self, why: str) -> None:
        """Remove this worker from its pool (it exits next); a failure only delays the
        pool's knowing (its provider finds the process gone)."""
        ident = self.identity
        log.info("leaving the pool: %s", why)
        try:
            self.manager.removeWorker(ident.worker_pool_id, ident.worker_group, ident.worker_id)
        except taskcluster.exceptions.TaskclusterFailure as failure:
            log.warning("removeWorker failed: %s", str(failure).splitlines()[0][:200])
