"""'Task resolved' messages on storage queues, and what makes sure no resolution is ever lost.

The process that resolves a task handles the resolution itself right after the write
(`dependency_resolver.follow_up`); a long fan-out, or a handling that failed, is announced
instead: a message on the `task-resolved` queue carrying everything the handler needs (a
`Resolution`), so handling it reads nothing back. What finishes the work if the process
dies between the write and the follow-up depends on how the task resolved:
- the run was claimed (a worker reported, a claim ran out, a cancel or deadline hit a
  running run): the run's claim row stays until the handler is done with the
  resolution, and the claim expiry sweep announces it again once the row is due;
- otherwise (a cancel or a deadline before any claim): a *delayed* intent on the `repairs`
  queue, sent before the write, which the repair sweep checks against the task row; one
  intent for many tasks written one after another (cancelTaskGroup's page, `SharedIntent`),
  withdrawn once every resolution written under it is followed up.
Handling a resolution twice changes nothing (see `dependency_resolver`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import timedelta

from shared.domain.dependencies import Dependent, resolution_of
from shared.domain.index import has_index_route
from shared.domain.runs import RunState
from shared.storage.client.message_queue import MessageQueue, SentMessage
from shared.storage.tables.task_group_table import FirstResolution
from shared.storage.tables.task_table import TaskRecord

log = logging.getLogger("queue.repairs")

RESOLVED_QUEUE = "task-resolved"
MAX_BACKOFF = 5   # a stalled graph is looked at again after at most 2**5 repair delays
REPAIR_QUEUE = "repairs"
REPAIR_DELAY = timedelta(seconds=60)
# Tasks one intent names at most: a queue message holds 64 KiB of base64 (48 KiB of JSON), and
# a taskId takes 25 characters of it.
MAX_NAMED = 1000


@dataclass(frozen=True)
class Resolution:
    """A task resolved by one of its runs, with what is needed to act on it."""
    task_id: str
    run_id: int
    state: RunState            # completed, failed or exception
    resolved: str              # when the run resolved
    task_group_id: str
    scheduler_id: str
    task_queue_id: str
    expires: str
    worker_group: str = ""     # empty when the run was never claimed
    worker_id: str = ""
    published: bool = False    # its events are out (known only to the process that wrote it)
    dependents: tuple[Dependent, ...] = ()   # those its row lists (see TaskRecord.dependents)
    more_dependents: bool = True             # the TaskDependencies table may hold others
    deadline: str = ""         # the task's, and its runs then: what its group's deadline row notes
    runs: int = 0
    index_routes: bool = True  # it has a route `index.<namespace>` (unknown: True, the safe side)
    # The repair intent that stands for it (a run nobody claimed), known only to the process
    # that wrote it: withdrawn once the resolution is followed up (see `DependencyResolver`).
    intent: SentMessage | SharedIntent | None = field(default=None, compare=False)

    @property
    def first(self) -> FirstResolution:
        """What its group's deadline row notes, if this is the task's first resolution."""
        return FirstResolution(self.deadline, self.resolved, self.runs)

    @classmethod
    def of(cls, record: TaskRecord, run_id: int) -> Resolution | None:
        """The resolution of `record`'s task by run `run_id`; None if that run did not resolve it."""
        state = resolution_of(record.status, run_id)
        if state is None:
            return None
        run, summary = record.status.run(run_id), record.summary
        return cls(record.task_id, run_id, state, run.resolved or "", summary["taskGroupId"],
                   summary["schedulerId"], summary["taskQueueId"], summary["expires"],
                   run.worker_group or "", run.worker_id or "", dependents=record.dependents,
                   more_dependents=record.more_dependents, deadline=record.status.deadline,
                   runs=len(record.status.runs), index_routes=_index_routes(record))

    @classmethod
    def from_message(cls, body: dict) -> Resolution:
        values = {name: body[key] for name, key in _MESSAGE_KEYS.items() if key in body}
        return cls(**{**values, "run_id": int(values["run_id"]), "state": RunState(values["state"]),
                      "dependents": tuple(Dependent.from_json(value) for value in values.get("dependents", ()))})

    def to_message(self) -> dict:
        message = {key: getattr(self, name) for name, key in _MESSAGE_KEYS.items()}
        return {**message, "state": self.state.value, "dependents": [value.to_json() for value in self.dependents]}


_MESSAGE_KEYS = {"task_id": "taskId", "run_id": "runId", "state": "state", "resolved": "resolved",
                 "task_group_id": "taskGroupId", "scheduler_id": "schedulerId", "task_queue_id": "taskQueueId",
                 "expires": "expires", "worker_group": "workerGroup", "worker_id": "workerId",
                 "dependents": "dependents", "more_dependents": "moreDependents", "deadline": "deadline",
                 "runs": "runs", "index_routes": "indexRoutes"}


def _index_routes(record: TaskRecord) -> bool:
    """Whether the task's routes (on its row, for events) name an index namespace."""
    return has_index_route(record.notice["routes"]) if "routes" in record.notice else True


class ResolutionMessages:
    def __init__(self, resolved: MessageQueue, repairs: MessageQueue, repair_delay: timedelta = REPAIR_DELAY) -> None:
        self.resolved = resolved
        self.repairs = repairs
        self.repair_delay = repair_delay

    def intend(self, task_id: str, run_id: int) -> SentMessage:
        """Before the write that resolves a run nobody claimed: follow its resolution up later,
        should this process die first; withdrawn once it is followed up here."""
        return self.repairs.send({"kind": "task-resolved", "taskId": task_id, "runId": run_id}, self.repair_delay)

    def announce(self, resolution: Resolution) -> None:
        self.resolved.send(resolution.to_message())

    def follow_up(self, resolution: Resolution) -> None:
        """The follow-up of an updater that only schedules runs (the dependency tracker's and
        the creators'): a resolution, should one come, goes to the queue-triggered resolver."""
        self.announce(resolution)

    def intend_graph_check(self, graph_id: str, parts_left: int, stalls: int = 0) -> None:
        """A new graph with `parts_left` parts to create: look again later, in case the
        messages of its parts went down with a process. After `stalls` looks in a row that
        found no progress (and sent the parts again), each waits twice as long as the one
        before, up to 32 repair delays: parts that are only slow (a busy host, a large
        backlog) are then sent again a few times in all, not at every look."""
        self.repairs.send({"kind": "graph-parts", "taskGraphId": graph_id, "partsLeft": parts_left,
                           "stalls": stalls}, self.repair_delay * 2 ** min(stalls, MAX_BACKOFF))

    def intend_readiness_check(self, task_id: str) -> SentMessage:
        """A new task with dependencies: check it again later in case its creator died before
        its own re-check; the creator withdraws it once that re-check is done."""
        return self.repairs.send({"kind": "check-ready", "taskId": task_id}, self.repair_delay)

    def intend_many(self, task_ids: list[str]) -> SharedIntent:
        """Before writes that may resolve runs nobody claimed, of each of `task_ids` in turn:
        one intent for them all (see `SharedIntent`), MAX_NAMED at most."""
        if len(task_ids) > MAX_NAMED:
            raise ValueError(f"one intent names {MAX_NAMED} tasks at most, not {len(task_ids)}")
        return SharedIntent(self, self.repairs.send({"kind": "tasks-resolved", "taskIds": list(task_ids)},
                                                    self.repair_delay))

    def settle(self, intent: SentMessage | SharedIntent, followed_up: bool) -> None:
        """A resolution that `intent` stood for was followed up here (`followed_up`: and its
        events are out), or will not be: the intent goes once nothing needs it any more."""
        if isinstance(intent, SharedIntent):
            intent.settled(followed_up)
        elif followed_up:
            self.withdraw(intent)

    def withdraw(self, intent: SentMessage) -> None:
        """An intent no longer needed (a deleted message is never delivered). At best: one the
        repair sweep already holds, or a failed deletion, is only settled as unneeded later."""
        try:
            self.repairs.delete(intent)
        except Exception as error:
            log.warning("intent %s not withdrawn (%s); the repair sweep will find nothing to do",
                        intent.message_id, error)


class SharedIntent:
    """One repair intent for the runs nobody claimed that a caller resolves one task after
    another (cancelTaskGroup's page of members): sent before the first write, it names every
    task; each resolution written under it `joins` it, and it is withdrawn once the caller is
    done (`close`, or the end of its `with` block) and each of them was followed up with its events out. One that was not
    (a failure; the process died) leaves it to the repair sweep, which follows up every named
    task's unclaimed resolution again (harmless where it was done). One queue message and its
    deletion per page instead of per task."""

    def __init__(self, messages: ResolutionMessages, sent: SentMessage) -> None:
        self._messages = messages
        self.sent = sent
        self._lock = threading.Lock()
        self._open = 0          # resolutions joined and not followed up yet
        self._closed = False    # no more will join
        self._kept = False      # one was not followed up here: the repair sweep's
        self._withdrawn = False

    def __enter__(self) -> SharedIntent:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def join(self) -> SharedIntent:
        with self._lock:
            self._open += 1
        return self

    def settled(self, followed_up: bool) -> None:
        with self._lock:
            self._open -= 1
            self._kept = self._kept or not followed_up
        self._withdraw_if_done()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._withdraw_if_done()

    def _withdraw_if_done(self) -> None:
        with self._lock:
            done = self._closed and self._open == 0 and not self._kept and not self._withdrawn
            self._withdrawn = self._withdrawn or done
        if done:
            self._messages.withdraw(self.sent)
