"""Workers: who claimed work from a task queue, when, and their quarantine.

A worker is known from its first claimWork. A quarantined worker gets no new work until its
quarantine ends; the runs it holds are left to it, as in Taskcluster: it may reclaim and
resolve them (a worker quarantined to be drained or looked at loses no work in progress).
A worker the worker manager removed or found gone is shut out instead (`shut_out`): the
same quarantine, and its runs resolved at once as exception/worker-shutdown (retried while
retries are left), so they need not wait for their claims to expire.

A claimWork writes its worker's row (the runs it is about to claim, its last activity) in
the transaction that writes those runs' claim rows, conditionally on the version of the row
it started from (see `claiming`): a quarantine written since refuses the transaction, so the
claimWork reads the row again, sees the quarantine and claims nothing. A quarantine that
comes while the claims are being made is found if the runs it could not claim are written
off the row afterwards, and the claimWork then releases what it claimed without answering
it; otherwise the runs are answered, the worker's like any it held when quarantined.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta

from shared.domain import lifecycle
from shared.domain.errors import NotFound
from shared.domain.runs import ReasonResolved, RunState
from shared.domain.timestamps import parse_iso, to_iso
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.tables.worker_table import WorkerRecord, WorkerTable, row_key
from shared.services.sweeps.activity_expiry import WorkerExpiry, lapsed
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.services.tasks.task_updater import TaskUpdater

log = logging.getLogger("queue.workers")
RECENT_TASKS = 20
WORKER_LIFETIME = timedelta(days=1)        # how long after its last claim a worker is listed
ACTIVE_REFRESH = timedelta(seconds=60)     # an idle worker's lastDateActive is written at most this often
NEVER_QUARANTINED = timedelta(days=3652)   # Taskcluster's quarantineUntil of a new worker: 10 years back
WORKER_MANAGER = "worker-manager"          # who shuts a removed worker out, in its quarantineDetails


class Workers:
    def __init__(self, worker_table: WorkerTable, claim_table: ClaimTable, updater: TaskUpdater, expiry: WorkerExpiry) -> None:
        self.worker_table = worker_table
        self.claim_table = claim_table
        self.updater = updater
        self.expiry = expiry

    def arrive(self, task_queue_id: str, worker_group: str, worker_id: str, now: datetime,
               fresh: bool = False) -> WorkerRecord:
        """The worker's row as its claimWork begins; a worker seen for the first time gets one.

        The version this process knows is enough unless it says the worker is quarantined
        (the quarantine may have been lifted since) or `fresh` is asked: a quarantine made
        since by another process is found when the claims are recorded, which is conditional
        on that version (see `worked`), as for a quarantine that races with the claims."""
        known = None if fresh else self.worker_table.last_known(task_queue_id, worker_group, worker_id)
        if known is not None and not self.quarantined(known, now):
            return known
        record = self.worker_table.load(task_queue_id, worker_group, worker_id)
        if record is not None:
            return record
        first = WorkerRecord(task_queue_id, worker_group, worker_id, to_iso(now), to_iso(now),
                             to_iso(now + WORKER_LIFETIME))
        self.expiry.watch(first)  # first: a worker row is never left without its expiry item
        try:
            return self.worker_table.insert(first)
        except AlreadyExists:  # the same worker's concurrent claimWork
            return self.worker_table.load(task_queue_id, worker_group, worker_id)

    @staticmethod
    def quarantined(record: WorkerRecord, now: datetime) -> bool:
        return bool(record.quarantine_until) and parse_iso(record.quarantine_until) > now

    def claiming(self, record: WorkerRecord, rows: list[ClaimRow], now: datetime) -> WorkerRecord | None:
        """Write the claim rows of runs about to be claimed, and note them on the worker's
        row, in one transaction; the worker as written, or None if it is quarantined (then
        nothing is written, and nothing may be claimed)."""
        runs = [(row.task_id, row.run_id) for row in rows]

        def write(noted: WorkerRecord) -> WorkerRecord:
            try:
                answer = self.claim_table.add(rows, beside=self.worker_table.update_operation(noted))
            except ChangedSinceRead:  # quarantined, or expired and deleted by the sweep meanwhile
                self.worker_table.forget(noted)
                raise
            return self.worker_table.wrote(noted, answer)
        note = _unless_quarantined(now, lambda worker: _active(worker, runs, now))
        try:   # `touch`: the claim rows are written even if the worker's row says nothing new
            return change_until_saved(self._reread(record, now), note, write, first=record, touch=True)
        except _Quarantined:
            return None

    def worked(self, record: WorkerRecord, noted: list[tuple[str, int]], claimed: list[tuple[str, int]],
               now: datetime) -> bool:
        """After a claimWork: take off the worker's row the runs `claiming` noted and it did
        not claim, or note its activity if it claimed nothing for a while; False if it was
        quarantined meanwhile, in which case the caller releases what it claimed."""
        missed = set(noted) - set(claimed)

        def note(worker: WorkerRecord) -> WorkerRecord:
            if not missed and (noted or now - parse_iso(worker.last_date_active) < ACTIVE_REFRESH):
                return worker
            kept = tuple(task for task in worker.recent_tasks if (task["taskId"], task["runId"]) not in missed)
            return replace(_active(worker, [], now), recent_tasks=kept)
        try:
            change_until_saved(self._reread(record, now), _unless_quarantined(now, note), self.worker_table.save,
                               first=record)
        except _Quarantined:
            return False
        return True

    def _reread(self, record: WorkerRecord, now: datetime):
        """How a refused write of the worker's row reads it again (made anew if the sweep
        deleted it meanwhile)."""
        return lambda: self.arrive(record.task_queue_id, record.worker_group, record.worker_id, now, fresh=True)

    def shut_out(self, task_queue_id: str, worker_group: str, worker_id: str, until: str, why: str,
                 now: datetime) -> dict:
        """A worker that must get no more work (the worker manager removed it, or found it
        gone): quarantined until `until` (when its credentials expire), its row made if it
        never claimed so that a first claimWork still in flight is refused too, and the runs
        it holds released: nobody will resolve them."""
        self.arrive(task_queue_id, worker_group, worker_id, now, fresh=True)
        worker = self.quarantine(task_queue_id, worker_group, worker_id, until, f"{why} by the worker manager", now,
                                 client_id=WORKER_MANAGER)
        if parse_iso(until) > now:
            self.release(task_queue_id, worker_group, worker_id, self.claim_table.held_by(
                task_queue_id, worker_group, worker_id), now, why)
        return worker

    def quarantine(self, task_queue_id: str, worker_group: str, worker_id: str, until: str, info: str,
                   now: datetime, client_id: str = "anonymous") -> dict:
        """quarantineWorker: no new work until `until` (a time past lifts it); the runs the
        worker holds stay its own. `client_id`: who asked, for the worker's quarantineDetails."""
        detail = {"clientId": client_id, "updatedAt": to_iso(now), "quarantineUntil": until,
                  "quarantineInfo": info or "[unspecified]"}   # Taskcluster's word for no reason given
        record = change_until_saved(
            lambda: self._existing(task_queue_id, worker_group, worker_id, now),
            lambda record: replace(record, quarantine_until=until, expires=_later(record.expires, until),
                                   quarantine_details=(*record.quarantine_details, detail)),
            self.worker_table.save)
        log.info("worker %s/%s on %s quarantined until %s", worker_group, worker_id, task_queue_id, until,
                 extra={"taskQueueId": task_queue_id, "workerId": worker_id, "action": "quarantine"})
        return render(record)

    def declare(self, task_queue_id: str, worker_group: str, worker_id: str, expires: str, now: datetime) -> dict:
        """declareWorker: the worker made known (as a first claimWork makes it), active now and
        kept at least until `expires` (an expiry never moves back, as in Taskcluster)."""
        def declared(worker: WorkerRecord) -> WorkerRecord:
            changed = replace(worker, last_date_active=to_iso(now), expires=_later(worker.expires, expires))
            if changed.expires != worker.expires:
                self.expiry.watch(changed)   # before the row says it
            return changed
        record = change_until_saved(self._reread(self.arrive(task_queue_id, worker_group, worker_id, now), now),
                                    declared, self.worker_table.save)
        return render(record)

    def release(self, task_queue_id: str, worker_group: str, worker_id: str, runs: list[tuple[str, int]],
                now: datetime, why: str = "quarantined") -> int:
        """Resolve the runs the worker still holds as worker-shutdown; returns how many.
        `why`: what happened to the worker (quarantined, removed, gone), for the log."""
        def shut_down(run_id: int):
            def transition(status):
                run = status.run(run_id)
                if run is None or run.state is not RunState.RUNNING or \
                        (run.worker_group, run.worker_id) != (worker_group, worker_id):
                    return status  # resolved, or someone else's run by now
                return lifecycle.resolve(status, run_id, ReasonResolved.WORKER_SHUTDOWN, now)
            return transition
        released = sum(self.updater.try_apply(task_id, shut_down(run_id), f"worker {why}")
                       for task_id, run_id in runs)
        if released:
            log.info("released %d runs of %s worker %s/%s", released, why, worker_group, worker_id,
                     extra={"taskQueueId": task_queue_id, "workerId": worker_id, "action": "release"})
        return released

    def get(self, task_queue_id: str, worker_group: str, worker_id: str, now: datetime) -> dict:
        return render(self._existing(task_queue_id, worker_group, worker_id, now))

    def list(self, task_queue_id: str, after: str, limit: int, quarantined: str | None,
             now: datetime) -> tuple[dict, str | None]:
        """listWorkers: a page of the queue's workers after `after`, and its last when more follow."""
        records = self.worker_table.page(task_queue_id, after, limit + 1)
        shown = [record for record in records[:limit] if not lapsed(record.expires, now)
                 and (quarantined is None or self.quarantined(record, now) == (quarantined == "true"))]
        return {"workers": [_summary(record, now) for record in shown]}, \
            row_key(records[limit - 1]) if len(records) > limit else None

    def _existing(self, task_queue_id: str, worker_group: str, worker_id: str, now: datetime) -> WorkerRecord:
        record = self.worker_table.load(task_queue_id, worker_group, worker_id)
        if record is None or lapsed(record.expires, now):
            raise NotFound(f"Worker {worker_group}/{worker_id} has not claimed from {task_queue_id}")
        return record


class _Quarantined(Exception):
    """The worker's row, as read, says it is quarantined: nothing is written."""


def _unless_quarantined(now: datetime, change):
    """`change` of a worker's row, refused (_Quarantined) while the row says it is quarantined."""
    def checked(worker: WorkerRecord) -> WorkerRecord:
        if Workers.quarantined(worker, now):
            raise _Quarantined
        return change(worker)
    return checked


def _active(record: WorkerRecord, runs: list[tuple[str, int]], now: datetime) -> WorkerRecord:
    """The worker active at `now`, with `runs` noted among its recent tasks (once each)."""
    recent = [*record.recent_tasks]
    recent += [{"taskId": task_id, "runId": run_id} for task_id, run_id in runs
               if {"taskId": task_id, "runId": run_id} not in recent]
    return replace(record, last_date_active=to_iso(now), recent_tasks=tuple(recent[-RECENT_TASKS:]),
                   expires=_later(record.expires, to_iso(now + WORKER_LIFETIME)))   # never moved back


def _later(first: str, second: str) -> str:
    return to_iso(max(parse_iso(first), parse_iso(second)))


def render(record: WorkerRecord) -> dict:
    """getWorker's body, as Taskcluster's: `quarantineUntil` always (for a worker never
    quarantined, ten years before it was first seen, the past Taskcluster writes), `actions`
    always empty; `quarantineDetails` besides, which its schema allows."""
    provisioner_id, worker_type = record.task_queue_id.split("/", 1)
    never = to_iso(parse_iso(record.first_claim) - NEVER_QUARANTINED)
    return {"provisionerId": provisioner_id, "workerType": worker_type, "taskQueueId": record.task_queue_id,
            "workerGroup": record.worker_group, "workerId": record.worker_id,
            "recentTasks": list(record.recent_tasks), "expires": record.expires,
            "firstClaim": record.first_claim, "lastDateActive": record.last_date_active,
            "quarantineUntil": record.quarantine_until or never,
            "quarantineDetails": list(record.quarantine_details), "actions": []}


def _summary(record: WorkerRecord, now: datetime) -> dict:
    """listWorkers' entry: `quarantineUntil` only while quarantined, as Taskcluster's."""
    out = {"workerGroup": record.worker_group, "workerId": record.worker_id, "firstClaim": record.first_claim,
           "lastDateActive": record.last_date_active}
    if Workers.quarantined(record, now):
        out["quarantineUntil"] = record.quarantine_until
    if record.recent_tasks:
        out["latestTask"] = record.recent_tasks[-1]
    return out
