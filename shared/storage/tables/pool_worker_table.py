"""The PoolWorkers table: the worker manager's workers, and each pool's provisioning row.

PartitionKey = escaped workerPoolId; a worker's RowKey is `<workerGroup>.<workerId>` (neither
may hold a '.'), so a pool's workers are one partition read in key order; the pool's
provisioning row (`~provisioning`, after every worker) sits beside them. Every change of a
worker is a merge conditional on the ETag it was read with, its events in its outbox. A
provisioning pass takes the provisioning row first (a conditional write of `passBegan`)
and records the workers it is about to start in one transaction with a second conditional
write of that row: of two passes of one pool at once, only one records workers, so
neither can push the pool past its maxCapacity on what it read (see `provisioner`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from azure.core import MatchConditions

from azure.data.tables import TableTransactionError, UpdateMode

from shared.domain.task_events import Event
from shared.domain.workers import WorkerState
from shared.storage.client.account import StorageAccount
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox import outbox
from shared.storage.outbox.outbox_rows import OutboxRows, row_name
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.batches import delete_if_unchanged, delete_row
from shared.storage.patterns.keys import escape_key
from shared.storage.patterns.queries import first_rows, row_or_none

TABLE = "PoolWorkers"
PROVISIONING = "~provisioning"   # sorts after every worker's key
_WORKERS_END = "~"


@dataclass(frozen=True)
class PoolWorkerRecord:
    worker_pool_id: str
    worker_group: str
    worker_id: str
    provider_id: str
    state: WorkerState
    capacity: int
    created: str
    last_modified: str
    last_checked: str
    expires: str
    provider_data: Mapping[str, Any] = field(default_factory=dict)
    token: Mapping[str, Any] | None = None      # a started worker's registration token record (its digest)
    secret_digest: str = ""                     # what reregisterWorker must present next (digest)
    terminate_after: str = ""                   # a running worker's reregistration deadline
    should_terminate: str = ""                  # why the worker should exit, once decided
    etag: str | None = None
    outbox: tuple[Event, ...] = ()

    @property
    def key(self) -> str:
        return row_name(escape_key(self.worker_pool_id), row_key(self.worker_group, self.worker_id))

    @property
    def name(self) -> str:
        return f"{self.worker_pool_id}/{self.worker_group}/{self.worker_id}"


@dataclass(frozen=True)
class ProvisioningRecord:
    """A pool's provisioning state: when its last pass began, and its back-off."""

    worker_pool_id: str
    pass_began: str = ""
    backoff_until: str = ""
    failures: int = 0
    pass_id: str = ""
    etag: str | None = None


def row_key(worker_group: str, worker_id: str) -> str:
    return f"{worker_group}.{worker_id}"


class PoolWorkerTable(OutboxRows):
    def __init__(self, account: StorageAccount, marks: PublicationMarks) -> None:
        super().__init__(account.table(TABLE), marks)

    def load(self, worker_pool_id: str, worker_group: str, worker_id: str) -> PoolWorkerRecord | None:
        entity = row_or_none(self._table, escape_key(worker_pool_id), row_key(worker_group, worker_id))
        return _record(worker_pool_id, entity) if entity is not None else None

    def insert(self, worker: PoolWorkerRecord) -> PoolWorkerRecord:
        """AlreadyExists if the worker has a row."""
        return self._written(worker, None)

    def save(self, worker: PoolWorkerRecord) -> PoolWorkerRecord:
        """Write `worker` over its row as read; ChangedSinceRead if it changed since."""
        return self._written(worker, worker.etag)

    def _written(self, worker: PoolWorkerRecord, etag: str | None) -> PoolWorkerRecord:
        new_etag, events = self.write(_entity(worker), etag, worker.outbox)
        return replace(worker, etag=new_etag, outbox=events)

    def delete(self, worker: PoolWorkerRecord) -> None:
        delete_if_unchanged(self._table, escape_key(worker.worker_pool_id),
                            row_key(worker.worker_group, worker.worker_id), worker.etag, worker.name)

    def page(self, worker_pool_id: str, after: str, limit: int, state: str | None = None,
             worker_group: str | None = None) -> list[PoolWorkerRecord]:
        """Up to `limit` workers of the pool in key order after the row key `after`, of
        `state` and `worker_group` only when given."""
        query, parameters = "PartitionKey eq @pk and RowKey gt @after and RowKey lt @end", {
            "pk": escape_key(worker_pool_id), "after": after, "end": _WORKERS_END}
        if worker_group is not None:
            query += " and RowKey gt @group and RowKey lt @groupEnd"
            parameters.update(group=f"{worker_group}.", groupEnd=f"{worker_group}/")
        if state is not None:
            query += " and state eq @state"
            parameters["state"] = state
        return [_record(worker_pool_id, entity) for entity in first_rows(self._table, query, parameters, limit)]

    def all(self, worker_pool_id: str, states: frozenset[WorkerState] | None = None) -> list[PoolWorkerRecord]:
        """Every worker of the pool (in one of `states`, when given)."""
        rows = self._table.query_entities("PartitionKey eq @pk and RowKey lt @end",
                                          parameters={"pk": escape_key(worker_pool_id), "end": _WORKERS_END})
        workers = [_record(worker_pool_id, entity) for entity in rows]
        return [worker for worker in workers if states is None or worker.state in states]

    # --- the provisioning row

    def provisioning(self, worker_pool_id: str) -> ProvisioningRecord:
        """The pool's provisioning row as it is (an empty one, never written, if none)."""
        entity = row_or_none(self._table, escape_key(worker_pool_id), PROVISIONING)
        if entity is None:
            return ProvisioningRecord(worker_pool_id)
        return ProvisioningRecord(worker_pool_id, entity.get("passBegan", ""), entity.get("backoffUntil", ""),
                                  int(entity.get("failures", 0)), entity.get("passId", ""), entity.metadata.get("etag"))

    def save_provisioning(self, record: ProvisioningRecord) -> ProvisioningRecord:
        """Write the row if it is still as read (or still absent); ChangedSinceRead if not."""
        record = replace(record, pass_id=uuid.uuid4().hex)
        try:
            new_etag, _ = self.write(_provisioning_entity(record), record.etag, ())
        except AlreadyExists as exc:   # another pass wrote the first version meanwhile
            raise ChangedSinceRead(f"provisioning of {record.worker_pool_id}") from exc
        return replace(record, etag=new_etag)

    def delete_provisioning(self, worker_pool_id: str) -> None:
        delete_row(self._table, escape_key(worker_pool_id), PROVISIONING)

    def record_requested(self, state: ProvisioningRecord, workers: list[PoolWorkerRecord]
                         ) -> tuple[ProvisioningRecord, list[PoolWorkerRecord]]:
        """Insert `workers` with a conditional write of the provisioning row as `state` read
        it, in one transaction; ChangedSinceRead if another pass wrote the row since."""
        assert state.etag is not None, "a pass writes the provisioning row before it records workers"
        state = replace(state, pass_id=uuid.uuid4().hex)
        prepared = [replace(worker, outbox=self.marks.prepare(self, worker.key, worker.outbox)) for worker in workers]
        operations = [("update", _provisioning_entity(state), {"mode": UpdateMode.MERGE, "etag": state.etag,
                                                                "match_condition": MatchConditions.IfNotModified})]
        operations += [("create", {**_entity(worker), **outbox.to_columns(worker.outbox)}) for worker in prepared]
        try:
            answers = self._table.submit_transaction(operations)
        except TableTransactionError as exc:
            if self.provisioning(state.worker_pool_id).pass_id != state.pass_id:
                self.marks.refused(tuple(event for worker in prepared for event in worker.outbox), exc,
                                   tuple(event for worker in workers for event in worker.outbox))
                raise ChangedSinceRead(f"provisioning of {state.worker_pool_id}") from exc
            answers = [{"etag": self.provisioning(state.worker_pool_id).etag}] + [
                {"etag": found.etag} for found in (self.load(w.worker_pool_id, w.worker_group, w.worker_id)
                                                   for w in prepared)]   # our answer was lost, not our write
        return (replace(state, etag=answers[0].get("etag")),
                [replace(worker, etag=answer.get("etag")) for worker, answer in zip(prepared, answers[1:])])


def _provisioning_entity(record: ProvisioningRecord) -> dict:
    return {"PartitionKey": escape_key(record.worker_pool_id), "RowKey": PROVISIONING,
            "passBegan": record.pass_began, "backoffUntil": record.backoff_until, "failures": record.failures,
            "passId": record.pass_id}


def _entity(worker: PoolWorkerRecord) -> dict:
    return {"PartitionKey": escape_key(worker.worker_pool_id), "RowKey": row_key(worker.worker_group, worker.worker_id),
            "workerGroup": worker.worker_group, "workerId": worker.worker_id, "providerId": worker.provider_id,
            "state": worker.state.value, "capacity": worker.capacity, "created": worker.created,
            "lastModified": worker.last_modified, "lastChecked": worker.last_checked, "expires": worker.expires,
            "providerData": json.dumps(dict(worker.provider_data), separators=(",", ":")),
            "token": json.dumps(dict(worker.token)) if worker.token else "",
            "secretDigest": worker.secret_digest, "terminateAfter": worker.terminate_after,
            "shouldTerminate": worker.should_terminate}


def _record(worker_pool_id: str, entity) -> PoolWorkerRecord:
    token = entity.get("token")
    return PoolWorkerRecord(
        worker_pool_id, entity["workerGroup"], entity["workerId"], entity["providerId"], WorkerState(entity["state"]),
        int(entity["capacity"]), entity["created"], entity["lastModified"], entity["lastChecked"], entity["expires"],
        json.loads(entity.get("providerData") or "{}"), json.loads(token) if token else None,
        entity.get("secretDigest", ""), entity.get("terminateAfter", ""), entity.get("shouldTerminate", ""),
        entity.metadata.get("etag"), outbox.from_entity(entity))
