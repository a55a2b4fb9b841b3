"""Workers as the worker manager sees them: their states, the legal moves between them, and
when a worker has overstayed (Taskcluster's worker states and lifecycle timeouts).

A provider that starts workers records each one `requested` before asking for it; the worker
becomes `running` when it registers; `stopping` while its provider takes it down; `stopped`
for good. The static provider's workers are `running` from the moment they are created, and
some moves skip `stopping`, as in Taskcluster.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from enum import Enum

from shared.domain.errors import Conflict
from shared.domain.worker_pools import Lifecycle


class WorkerState(str, Enum):
    REQUESTED = "requested"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


_MOVES = {
    WorkerState.REQUESTED: frozenset({WorkerState.RUNNING, WorkerState.STOPPING, WorkerState.STOPPED}),
    WorkerState.RUNNING: frozenset({WorkerState.STOPPING, WorkerState.STOPPED}),
    WorkerState.STOPPING: frozenset({WorkerState.STOPPED}),
    WorkerState.STOPPED: frozenset(),
}

_WORKER_ID = re.compile(r"[a-zA-Z0-9_-]{1,38}")

# The states that hold capacity: the estimator counts them against maxCapacity.
NOT_STOPPED = frozenset({WorkerState.REQUESTED, WorkerState.RUNNING, WorkerState.STOPPING})


def can_move(current: WorkerState, target: WorkerState) -> bool:
    return target is current or target in _MOVES[current]


def move(current: WorkerState, target: WorkerState, worker: str = "worker") -> WorkerState:
    """The state after asking for `target`: the same state again is allowed (an idempotent
    retry); a move back (e.g. `running` to `requested`, anything out of `stopped`) raises
    Conflict naming the worker."""
    if not can_move(current, target):
        raise Conflict(f"{worker} is {current.value}: it cannot become {target.value}")
    return target


def new_worker_id(prefix: str) -> str:
    """A fresh worker id under Taskcluster's pattern (`[a-zA-Z0-9-_]`, at most 38)."""
    worker_id = f"{prefix}-{secrets.token_hex(8)}"
    if not _WORKER_ID.fullmatch(worker_id):
        raise ValueError(f"prefix {prefix!r} makes an invalid worker id")
    return worker_id


def registration_deadline(created: datetime, lifecycle: Lifecycle) -> datetime:
    """Until when a requested worker counts as capacity on its way (and must register)."""
    return created + timedelta(seconds=lifecycle.registration_timeout)


def reregistration_deadline(registered: datetime, lifecycle: Lifecycle) -> datetime:
    """Taskcluster's `terminateAfter` of a running worker: reregisterWorker moves it on."""
    return registered + timedelta(seconds=lifecycle.reregistration_timeout)


def termination_reason(state: WorkerState, now: datetime, lifecycle: Lifecycle, *, created: datetime,
                       terminate_after: datetime | None = None, last_active: datetime | None = None,
                       static: bool = False) -> str | None:
    """Why a worker should be stopped now, or None. `terminate_after` is the running
    worker's reregistration deadline; `last_active` its last claimWork or reclaimTask (or its
    registration). Static workers are stopped only by removeWorker or their expiry, as in
    Taskcluster."""
    if static or state not in (WorkerState.REQUESTED, WorkerState.RUNNING):
        return None
    if state is WorkerState.REQUESTED:
        if now >= registration_deadline(created, lifecycle):
            return f"did not register within registrationTimeout ({lifecycle.registration_timeout} s)"
        return None
    if terminate_after is not None and now >= terminate_after:
        return f"did not reregister within reregistrationTimeout ({lifecycle.reregistration_timeout} s)"
    if last_active is not None and now >= last_active + timedelta(seconds=lifecycle.queue_inactivity_timeout):
        return f"claimed no work within queueInactivityTimeout ({lifecycle.queue_inactivity_timeout} s)"
    return None


def credentials_client_id(provider_id: str, worker_pool_id: str, worker_group: str, worker_id: str) -> str:
    """Taskcluster's name of a registered worker's temporary credentials."""
    return f"worker/{provider_id}/{worker_pool_id}/{worker_group}/{worker_id}"


def credentials_scopes(worker_pool_id: str, worker_group: str, worker_id: str) -> list[str]:
    """What a registered worker's credentials carry: Taskcluster's list (its roles
    `worker-pool:<pool>` and `worker-id:<group>/<id>`, claiming from its queue as itself,
    removing and reregistering itself), and asking shouldWorkerTerminate about itself, which
    Taskcluster leaves to the deployment's roles and a deployment of ours may not have."""
    worker = f"{worker_pool_id}/{worker_group}/{worker_id}"
    return [
        f"assume:worker-type:{worker_pool_id}",
        f"assume:worker-pool:{worker_pool_id}",
        f"assume:worker-id:{worker_group}/{worker_id}",
        f"queue:worker-id:{worker_group}/{worker_id}",
        f"secrets:get:worker-type:{worker_pool_id}",
        f"secrets:get:worker-pool:{worker_pool_id}",
        f"queue:claim-work:{worker_pool_id}",
        f"worker-manager:remove-worker:{worker}",
        f"worker-manager:reregister-worker:{worker}",
        f"worker-manager:should-worker-terminate:{worker}",
    ]
