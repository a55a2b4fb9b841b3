"""claimWork and reclaimTask: handing pending runs to workers, exactly once each.

A run is claimed by the conditional write that turns it from pending to running; of all
the workers that read the same pending hint, only one write can succeed. The hint is
only a pointer: it is checked against the task row and dropped once it is stale.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable
from datetime import datetime, timedelta

from shared.runtime.thread_pools import CLAIMS
from shared.domain import lifecycle
from shared.domain.errors import NotFound
from shared.domain.runs import RunState
from shared.domain.task_definition import priority_rank
from shared.domain.task_status import render_status
from shared.domain.timestamps import parse_iso, to_iso, utcnow
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.tables.pending_table import PendingHint, PendingTable
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.storage.tables.worker_table import WorkerRecord
from shared.runtime.concurrent_steps import at_once
from shared.services.claims.credentials import CredentialIssuer
from shared.services.claims.pending_buffer import PendingBuffer
from shared.services.claims.task_queues import TaskQueues
from shared.services.tasks.task_updater import TaskUpdater, claim_row
from shared.services.claims.workers import Workers
from shared.services.claims.work_signal import WorkSignal

log = logging.getLogger("queue.claims")
# A hint whose run does not exist (yet) is left alone this long: its task may still be
# being written. Older ones are leftovers of a crashed create and are removed.
ORPHAN_HINT_GRACE = timedelta(minutes=10)
TAKES = 3   # hands of hints one claimWork takes at most (the later ones when earlier hints were stale)
CONTENTION_MEMORY = 10.0   # seconds a lost race makes this process's claimWork on that queue pick at random


def _left_pending(record: TaskRecord | None, run_id: int) -> bool:
    run = record.status.run(run_id) if record is not None else None
    return run is not None and run.state is not RunState.PENDING


@dataclass
class _Worker:
    """The worker of one claimWork: its row as last written, the runs noted on it."""
    record: WorkerRecord
    noted: list[tuple[str, int]] = field(default_factory=list)
    quarantined: bool = False


class _Skip(Exception):
    """The hint does not lead to a claimable run; `stale` says whether to delete it.
    `held_until`: the run is running already, claimed by this same worker (in a concurrent
    or repeated claimWork), whose claim row is the one this call wrote over; `lost`: claimed
    by another worker."""

    def __init__(self, stale: bool, held_until: str | None = None, lost: bool = False) -> None:
        self.stale = stale
        self.held_until = held_until
        self.lost = lost   # another worker claimed the run: a sign of contention


class WorkClaimer:
    def __init__(self, task_table: TaskTable, pending_table: PendingTable, claim_table: ClaimTable, updater: TaskUpdater,
                 signal: WorkSignal, queues: TaskQueues, issuer: CredentialIssuer, workers: Workers,
                 claim_timeout: int, wait_seconds: int) -> None:
        self.claim_table = claim_table
        self.workers = workers
        self.task_table = task_table
        self.pending_table = pending_table
        self.updater = updater
        self.signal = signal
        self.queues = queues
        self.issuer = issuer
        self.claim_timeout = timedelta(seconds=claim_timeout)
        self.wait_seconds = wait_seconds
        self._lost_race: dict[str, float] = {}   # task queue -> when a claim here last lost a race
        self.buffer = PendingBuffer(pending_table, signal)

    def claim_work(self, task_queue_id: str, worker_group: str, worker_id: str, count: int) -> dict:
        """Claim up to `count` runs, long-polling while the queue is empty; a quarantined
        worker gets none."""
        worker = _Worker(self.workers.arrive(task_queue_id, worker_group, worker_id, utcnow()))
        if self.workers.quarantined(worker.record, utcnow()):
            return {"tasks": []}
        give_up = time.monotonic() + self.wait_seconds
        while True:
            claimed = self._claim_available(task_queue_id, worker, count)
            remaining = give_up - time.monotonic()
            if claimed or remaining <= 0 or worker.quarantined:
                break
            self.signal.wait(task_queue_id, remaining)
        runs = [(claim["status"]["taskId"], claim["runId"]) for claim in claimed]
        # Once runs are claimed they must reach the worker: bookkeeping that fails after
        # that is logged, not raised (an error answer would leave the runs claimed by
        # nobody until their claims expired).
        if not _best_effort(lambda: self.workers.worked(worker.record, worker.noted, runs, utcnow()), True,
                            "record the worker's claims"):
            self.workers.release(task_queue_id, worker_group, worker_id, runs, utcnow())
            claimed = []
        _best_effort(lambda: self.queues.seen(task_queue_id, to_iso(utcnow() + timedelta(days=1))), None,
                     "record the task queue as seen")
        return {"tasks": claimed}

    def _claim_available(self, task_queue_id: str, worker: _Worker, count: int) -> list[dict]:
        claimed: list[dict] = []
        done: list[PendingHint] = []   # hints to delete: claimed, or found stale
        twins: list[PendingHint] = []
        read = False
        for _ in range(TAKES):
            contended = time.monotonic() - self._lost_race.get(task_queue_id, -CONTENTION_MEMORY) < CONTENTION_MEMORY
            hints, more_twins = _one_per_run(self.buffer.take(task_queue_id, count - len(claimed), contended,
                                                              may_read=not read))
            read = True
            twins += more_twins
            if not hints:
                break
            try:
                stopped, lost = self._claim_hints(hints, worker, claimed, done)
            except Exception:
                self._settle(task_queue_id, done, twins)
                raise
            if lost:
                self._lost_race[task_queue_id] = time.monotonic()
            if stopped or lost or len(claimed) >= count:   # lost: the others' hints are contended too
                break
        self._settle(task_queue_id, done, twins)
        return claimed

    def _settle(self, task_queue_id: str, done: list[PendingHint], twins: list[PendingHint]) -> None:
        """Delete the hints of runs claimed or found stale (their twins too); give the other
        twins back to the buffer."""
        settled = {(hint.task_id, hint.run_id) for hint in done}
        done = done + [twin for twin in twins if (twin.task_id, twin.run_id) in settled]
        if done:
            self.pending_table.remove_soon(done)
        self.buffer.give_back(task_queue_id, [twin for twin in twins if (twin.task_id, twin.run_id) not in settled])

    def _claim_hints(self, hints: list[PendingHint], worker: _Worker, claimed: list[dict],
                     done: list[PendingHint]) -> tuple[bool, bool]:
        """Try to claim each hint's run, appending answers to `claimed` and hints to delete to
        `done`; returns (whether an error or a quarantine ended the claiming, whether another
        claimer won any)."""
        # A run this process knows left pending never comes back to it: its hint is stale,
        # and a claim row written for it would be written over the run's own.
        over = [hint for hint in hints if _left_pending(self.task_table.last_written(hint.task_id), hint.run_id)]
        done += over
        hints = [hint for hint in hints if hint not in over]
        if not hints:
            return False, False
        now = utcnow()
        taken_until = now + self.claim_timeout
        worker_group, worker_id = worker.record.worker_group, worker.record.worker_id
        rows = [ClaimRow(hint.task_queue_id, hint.task_id, hint.run_id, worker_group, worker_id, to_iso(taken_until))
                for hint in hints]
        # Watched before the claims exist, so none outlives a crash unwatched; noted on the
        # worker's row in the same transaction, which a quarantine since refuses.
        written = self.workers.claiming(worker.record, rows, now)
        if written is None:
            worker.quarantined = True
            return True, False
        worker.record = written
        worker.noted += [(row.task_id, row.run_id) for row in rows]
        outcomes = at_once(CLAIMS, [partial(self._claim_hint, hint, worker_group, worker_id, now, taken_until)
                                       for hint in hints], settle=True)
        failed, errors, lost = [], [], False
        for hint, row, outcome in zip(hints, rows, outcomes):
            if not isinstance(outcome, Exception):   # the claim's answer
                claimed.append(outcome)
                done.append(hint)
                continue
            failed.append((row, outcome.held_until if isinstance(outcome, _Skip) else None))
            if isinstance(outcome, _Skip):
                lost = lost or outcome.lost
                if outcome.stale:
                    done.append(hint)
            else:
                errors.append(outcome)
        self._unwatch(failed)
        if errors and not claimed:
            raise errors[0]
        for error in errors:
            log.error("claimWork on %s: answering with the %d runs claimed despite an error", hints[0].task_queue_id,
                      len(claimed), exc_info=error)
        return bool(errors), lost

    def _claim_hint(self, hint: PendingHint, worker_group: str, worker_id: str, now: datetime,
                    taken_until: datetime) -> dict:
        def take(status):
            run = status.run(hint.run_id)
            if run is None:
                raise _Skip(stale=now - hint.written > ORPHAN_HINT_GRACE)
            if run is not status.pending_run:
                # A run this worker holds, or resolved: the row just written over is its claim's,
                # or its resolution's intent until that is processed, so it is kept as it was.
                held_until = _held_until(run, worker_group, worker_id)
                raise _Skip(stale=True, held_until=held_until, lost=run.state is RunState.RUNNING and not held_until)
            if lifecycle.is_past_deadline(status, now):
                raise _Skip(stale=True)  # the deadline resolver owns it now
            return lifecycle.claim(status, hint.run_id, worker_group, worker_id, now, taken_until)

        def of_this_queue(record: TaskRecord) -> None:
            if record.summary["taskQueueId"] != hint.task_queue_id:   # a createTask refused late
                raise _Skip(stale=True)
            if hint.priority_rank != priority_rank(record.summary["priority"]):
                # A priority the task has not, or not yet (see `priorities`: the hint of its
                # new one is written before its row); a young one may be its row's next.
                raise _Skip(stale=now - hint.written > ORPHAN_HINT_GRACE)

        try:
            record = self.updater.apply(hint.task_id, take, "claim", with_definition=True, remove_hints=False,
                                        authorize=of_this_queue)
        except NotFound:
            raise _Skip(stale=now - hint.written > ORPHAN_HINT_GRACE) from None
        return self._claim_response(record, hint.run_id, worker_group, worker_id, now, taken_until, True)

    def claim_task(self, task_id: str, run_id: int, worker_group: str, worker_id: str,
                   authorize: Callable[[TaskRecord], None] | None = None) -> dict:
        """claimTask (deprecated): claim that pending run for the worker, as a claimWork that
        found its hint would; 404 for an unknown task or run, 409 for a run not pending, and
        an empty answer for a quarantined worker (Taskcluster's); the claim again to the worker
        that holds the run (a retry). The run's state is checked
        on the row read before anything is written: a claim row written over the one of a
        run this worker holds already would move that claim's watch."""
        now = utcnow()
        taken_until = now + self.claim_timeout
        record = self.task_table.load(task_id)
        if record is None:
            raise NotFound(f"Task {task_id} not found")
        if authorize is not None:
            authorize(record)
        run = record.status.run(run_id)
        if (run is not None and run_id == len(record.status.runs) - 1 and run.state is RunState.RUNNING
                and (run.worker_group, run.worker_id) == (worker_group, worker_id)):
            # A retry by the worker that holds it (its answer was lost): its claim again, as
            # Taskcluster answers it, with the run's takenUntil.
            held = self.task_table.load(task_id, with_definition=True)
            return self._claim_response(held, run_id, worker_group, worker_id, now, parse_iso(run.taken_until), True)
        lifecycle.claim(record.status, run_id, worker_group, worker_id, now, taken_until)   # or 404, 409
        task_queue_id = record.summary["taskQueueId"]
        worker = self.workers.arrive(task_queue_id, worker_group, worker_id, now)
        row = ClaimRow(task_queue_id, task_id, run_id, worker_group, worker_id, to_iso(taken_until))
        written = None if self.workers.quarantined(worker, now) else self.workers.claiming(worker, [row], now)
        if written is None:
            return {}
        try:
            claimed = self.updater.apply(
                task_id, lambda status: lifecycle.claim(status, run_id, worker_group, worker_id, now, taken_until),
                "claim", with_definition=True)
        except Exception:   # claimed meanwhile: by another, whose watch is not this row, or by this worker
            again = _best_effort(lambda: self.task_table.load(task_id), None, "read the task again")
            if again is not None:   # else the claim resolver removes the row when it is due
                self._unwatch([(row, _held_until(again.status.run(run_id), worker_group, worker_id))])
            _best_effort(lambda: self.workers.worked(written, [(task_id, run_id)], [], utcnow()), True,
                         "take the run off the worker's row")
            raise
        _best_effort(lambda: self.workers.worked(written, [(task_id, run_id)], [(task_id, run_id)], utcnow()), True,
                     "record the worker's claim")
        _best_effort(lambda: self.queues.seen(task_queue_id, to_iso(utcnow() + timedelta(days=1))), None,
                     "record the task queue as seen")
        return self._claim_response(claimed, run_id, worker_group, worker_id, now, taken_until, True)

    def _unwatch(self, failed: list[tuple[ClaimRow, str | None]]) -> None:
        """After claims that failed, each row with the `takenUntil` of the run's claim if this
        same worker holds it (a claim of it that raced this one): that row is the claim's own
        and keeps its `takenUntil`; the others are removed."""
        for row, held_until in failed:
            if held_until:
                _best_effort(lambda: self.claim_table.move(row, held_until), None, "restore a claim row")
        unused = [row for row, held_until in failed if not held_until]
        if unused:
            _best_effort(lambda: self.claim_table.remove(unused), None, "remove the watches of runs not claimed")

    def reclaim(self, task_id: str, run_id: int, authorize: Callable[[TaskRecord], None] | None = None) -> dict:
        """`authorize(record)`: the caller's scope check on the task as read, before the write."""
        now = utcnow()
        taken_until = now + self.claim_timeout
        record = self.updater.apply(
            task_id, lambda status: lifecycle.reclaim(status, run_id, now, taken_until), "reclaim",
            with_definition=True, authorize=authorize)
        run = record.status.run(run_id)
        # Moved after the write: until then the row's earlier `takenUntil` only makes the
        # sweep look early (and find the claim still good).
        self.claim_table.add([claim_row(record.summary["taskQueueId"], task_id, run)])
        return self._claim_response(record, run_id, run.worker_group, run.worker_id, now, taken_until, False)

    def _claim_response(self, record: TaskRecord, run_id: int, worker_group: str, worker_id: str,
                        now: datetime, taken_until: datetime, with_task: bool) -> dict:
        definition = record.definition
        out = {
            "status": render_status(record.summary, record.status),
            "runId": run_id,
            "workerGroup": worker_group,
            "workerId": worker_id,
            "takenUntil": to_iso(taken_until),
            "credentials": self.issuer.for_run(record.task_id, run_id, worker_group, worker_id,
                                               definition["scopes"], now, taken_until),
        }
        if with_task:
            out["task"] = definition
        return out



def _one_per_run(hints: list[PendingHint]) -> tuple[list[PendingHint], list[PendingHint]]:
    """The first hint of each run, and the others (two schedulers racing to make a run
    pending each write a hint; one claim settles both)."""
    first, twins = {}, []
    for hint in hints:
        if (hint.task_id, hint.run_id) in first:
            twins.append(hint)
        else:
            first[hint.task_id, hint.run_id] = hint
    return list(first.values()), twins


def _held_until(run, worker_group: str, worker_id: str) -> str | None:
    """The run's `takenUntil` if `worker_group`/`worker_id` holds its claim."""
    if run is not None and run.taken_until and (run.worker_group, run.worker_id) == (worker_group, worker_id):
        return run.taken_until
    return None


def _best_effort(action, fallback, what: str):
    """`action()`, or `fallback` after logging why it failed."""
    try:
        return action()
    except Exception:
        log.exception("claimWork could not %s; carrying on", what)
        return fallback
