"""What follows a task's resolution: its dependents are unblocked, its task graph reacts
(rerun, blocked, finished), its group learns that one more member resolved, a completed
task is indexed at its `index.` routes (see `index.indexer`), and the claimed run's row,
which stood for the resolution until now, is removed.

The process that resolved the task does this at once (`follow_up`): the dependents before
it answers (a dependent is pending when the call that resolved its last dependency returns),
the group and graph alongside and, once both are done, the claimed run's row, after it has
answered (a group or graph learns of the resolution a few milliseconds later, as in
Taskcluster, whose group resolution follows the task's events). No message, no wait for a
queue poll. A resolution with a long fan-out (a full page of dependents or more) has its
dependents processed after the call answered, page by page, in this process's background
while it has room (`AFTER_ANSWER`); past that, it is announced as a 'task resolved' event,
carrying the `Resolution`, for the queue-triggered handler, which scales out; so is one
whose handling failed here. (Announced, a fan-out waited for the trigger's next poll: up to
`maxPollingInterval`, 2 s, before its first dependent was pending.) A process that dies
first leaves the claimed run's row or the repair intent, which bring the resolution back
(see `resolution_messages`); repairs read it from the task row.

Events arrive at least once and may be handled twice, concurrently or after a crash
midway: every step is idempotent (a deleted requirement stays deleted, scheduling and
reruns are keyed by run, the group's resolved time only moves forward), and the claimed
run's row goes last, so a crash before it leaves the resolution to be announced again.
The row goes only once the task's events are out, too (published by the writer, or found
in the task's outbox and published here): until then it is looked at again later.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import Callable

from shared.runtime.thread_pools import FAN_OUTS, RESOLUTION_GROUPS
from shared.domain.timestamps import to_iso, utcnow
from shared.storage.tables.claim_table import ClaimRow, ClaimTable
from shared.storage.tables.task_table import TaskRecord, TaskTable
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.event_publisher import EventPublisher
from shared.services.index.indexer import Indexer
from shared.services.dependencies.resolution_messages import Resolution, ResolutionMessages
from shared.services.scheduler.task_graphs import TaskGraphs
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.sweeps.claim_resolver import RECHECK

log = logging.getLogger("queue.resolutions")
AFTER_ANSWER = 64   # resolutions finished after their call answered, at most, per process
# What became of a resolution's dependents in the call that resolved it.
DONE, LONG, FAILED = "done", "a long fan-out", "failed"


class _AfterAnswer:
    """The resolutions a process finishes after their call answered: a call finds room or
    waits for its own (a process resolving tasks faster than it counts groups slows its
    callers down instead of queueing work without end), and one can wait for none left."""

    def __init__(self, room: int) -> None:
        self._room = threading.BoundedSemaphore(room)
        self._unfinished = 0
        self._changed = threading.Condition()

    def enter(self) -> bool:
        if not self._room.acquire(blocking=False):
            return False
        with self._changed:
            self._unfinished += 1
        return True

    def leave_after(self, finish: Callable[[], None]) -> None:
        try:
            finish()
        except BaseException:   # noqa: BLE001 (whatever it was, the pool's thread lives on: the claimed row stays)
            log.exception("finishing a resolution after its call answered failed")
        finally:
            self._room.release()
            with self._changed:
                self._unfinished -= 1
                self._changed.notify_all()

    def wait_for_none(self, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._unfinished == 0, timeout)


_after_answer = _AfterAnswer(AFTER_ANSWER)


def _failed(resolution: Resolution, what: str, then: str = "announcing it instead") -> None:
    log.exception("task %s run %s: %s; %s", resolution.task_id, resolution.run_id, what, then,
                  extra={"taskId": resolution.task_id})


class DependencyResolver:
    def __init__(self, task_table: TaskTable, dependency_tracker: DependencyTracker, task_groups: TaskGroups,
                 task_graphs: TaskGraphs, claim_table: ClaimTable, messages: ResolutionMessages, publisher: EventPublisher,
                 indexer: Indexer) -> None:
        self.indexer = indexer
        self.publisher = publisher
        self.messages = messages
        self.task_table = task_table
        self.dependency_tracker = dependency_tracker
        self.task_groups = task_groups
        self.task_graphs = task_graphs
        self.claim_table = claim_table

    def handle_message(self, body: dict) -> None:
        """A 'task resolved' event as the queue carries it."""
        self.handle_resolution(Resolution.from_message(body))

    def handle(self, task_id: str, run_id: int) -> bool:
        """Process the resolution of `task_id` by run `run_id`, read from the task row; False
        if that run did not resolve the task (an intent whose write never happened, or a
        retried run)."""
        return self._handle_read(self.task_table.load(task_id), run_id)

    def handle_unclaimed(self, task_id: str) -> bool:
        """`handle` the task's last resolution by a run nobody claimed (a cancel's, a
        deadline's), read from its row; False if it has none."""
        record = self.task_table.load(task_id)
        runs = [run for run in (record.status.runs if record else ()) if run.state.is_resolved and not run.worker_group]
        return bool(runs) and self._handle_read(record, runs[-1].run_id)

    def _handle_read(self, record: TaskRecord | None, run_id: int) -> bool:
        resolution = Resolution.of(record, run_id) if record else None
        if resolution is None:
            return False
        published = self.publisher.settle(self.task_table, record.task_id, record.outbox, record.etag)
        self.handle_resolution(replace(resolution, published=published))
        return True

    def follow_up(self, resolution: Resolution) -> None:
        """Right after the write that resolved the task: its dependents here, its group, graph
        and index entries alongside, finished after the call answers if there is room; what
        could not be done here is announced."""
        later = _after_answer.enter()
        try:
            alongside = RESOLUTION_GROUPS.submit(self._alongside, resolution)
        except BaseException:   # not handed over: its room is free again (or `settled` waits for ever)
            if later:
                _after_answer.leave_after(lambda: None)
            raise
        handled = None   # stays None if this thread dies here: the claimed run's row brings it back
        try:
            handled = self._dependents(resolution)
        finally:
            finish = partial(self._finish, resolution, handled, alongside)
            if later:
                alongside.add_done_callback(lambda _: _after_answer.leave_after(finish))
            elif handled is not None:
                finish()

    def _dependents(self, resolution: Resolution) -> str:
        try:
            return DONE if self.dependency_tracker.task_resolved(resolution, long_fan_out=False) else LONG
        except Exception:
            _failed(resolution, "processing its dependents failed")
            return FAILED

    def _finish(self, resolution: Resolution, handled: str | None, alongside: Future) -> None:
        if handled is None:
            return
        try:
            alongside.result()
            if handled == DONE:
                self._processed(resolution)
                return
            if handled == LONG and _after_answer.enter():
                FAN_OUTS.detach(_after_answer.leave_after, partial(self._fan_out, resolution))
                return
        except Exception:
            _failed(resolution, "handling its resolution failed")
        self._announce(resolution)

    def _fan_out(self, resolution: Resolution) -> None:
        """A long fan-out's dependents, page by page, then the claimed run's row."""
        try:
            if self.dependency_tracker.task_resolved(resolution):
                self._processed(resolution)
                return
        except Exception:
            _failed(resolution, "processing its long fan-out failed")
        self._announce(resolution)

    def _announce(self, resolution: Resolution) -> None:
        try:
            self.messages.announce(resolution)
        except Exception:  # the write stands: its claim row or repair intent brings it back
            _failed(resolution, "announcing its resolution failed", "it is repaired later")

    def handle_resolution(self, resolution: Resolution, long_fan_out: bool = True) -> bool:
        """Process a resolution; False (with its claim row kept) if its fan-out is long and
        `long_fan_out` is False. The dependents, and the graph and group, are independent
        of each other: they are processed at once, the claim row removed after both."""
        alongside = RESOLUTION_GROUPS.submit(self._alongside, resolution)
        try:
            handled = self.dependency_tracker.task_resolved(resolution, long_fan_out)
        finally:
            alongside.result()   # its errors too; done twice, it changes nothing
        if handled:
            self._processed(resolution)
        return handled

    def _processed(self, resolution: Resolution) -> None:
        """What stands for the resolution goes, once the task's events are out: the claimed
        run's row, or the repair intent its writer sent for a run nobody claimed (left, the
        repair sweep would follow the resolution up again a minute later)."""
        task_id, run_id = resolution.task_id, resolution.run_id
        if resolution.worker_group:
            row = ClaimRow(resolution.task_queue_id, task_id, run_id, resolution.worker_group, resolution.worker_id)
            if resolution.published or self.publisher.settle(self.task_table, task_id):
                self.claim_table.remove_soon([row])
            else:   # its events are not out: the claim expiry sweep brings the resolution back
                self.claim_table.move(row, to_iso(utcnow() + RECHECK))
        elif resolution.intent is not None:   # kept if the events are not out: its repair publishes them
            self.messages.settle(resolution.intent,
                                 resolution.published or self.publisher.settle(self.task_table, task_id))
        log.info("task %s run %s resolution processed", task_id, run_id, extra={"taskId": task_id})

    @staticmethod
    def settled(timeout: float = 30.0) -> bool:
        """Wait until every resolution this process finishes after its call answered is
        finished (what a test, or a process about to stop, waits for); False on time-out."""
        return _after_answer.wait_for_none(timeout)

    def _alongside(self, resolution: Resolution) -> None:
        """What does not wait for the dependents: the group and graph, then the index."""
        self._group_and_graph(resolution)
        self.indexer.task_resolved(resolution)

    def _group_and_graph(self, resolution: Resolution) -> None:
        group_id, task_id = resolution.task_group_id, resolution.task_id
        if self.task_graphs.closes_label(resolution):   # its label and its membership counted down at once
            group_resolved, labels_open = self.task_groups.member_completed_label(group_id, task_id, resolution.first)
            self.task_graphs.label_completed(group_id, task_id, resolution.run_id, labels_open)
        else:
            self.task_graphs.task_failed(resolution)
            group_resolved = self.task_groups.member_resolved(group_id, task_id, resolution.first)
        if group_resolved:
            log.info("task group %s resolved", group_id, extra={"taskGroupId": group_id})

