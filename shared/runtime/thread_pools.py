"""Every thread pool of the process, declared in one place, and which may wait on which.

A thread that waits for work it handed to a pool must never be one of that pool's threads (or
of a pool that waits on it): a full pool would wait on itself for ever. So the pools come in
layers, and work running in a pool may hand work to, and wait on, pools of LOWER layers only.
Each pool checks this when work is handed to it (`submit`), from the name of the handing
thread, so a call path that breaks the layering fails in the tests instead of hanging in
production one day. Work that is handed on and never waited for (`detach`) may go anywhere.

Layer 0 pools run storage calls and hand nothing on; each layer above may use those below.
The sizes are the concurrent storage requests one step may have in flight: storage answers
in milliseconds, so threads mostly wait.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable


class LayeringBroken(RuntimeError):
    """Work was handed to a pool by a thread of the same or a lower layer."""


class Pool(ThreadPoolExecutor):
    """A named pool of a layer (see the module's docstring)."""

    def __init__(self, name: str, workers: int, layer: int, purpose: str) -> None:
        super().__init__(max_workers=workers, thread_name_prefix=name)
        self.name, self.layer, self.purpose = name, layer, purpose

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        self._check_layer()
        return super().submit(fn, *args, **kwargs)

    def map(self, fn: Callable, *iterables, timeout=None, chunksize=1):
        """As ThreadPoolExecutor.map, but a single item runs in the calling thread: handing it
        to a thread and waiting for it cost more CPU than it saved, with nothing to overlap
        (a child createTask, with one dependency, made four such hand-overs: 14% of the host's
        CPU for it under 16 parallel callers). An error is raised when the results are read."""
        items = list(zip(*iterables))
        if len(items) != 1:
            return super().map(fn, *zip(*items), timeout=timeout) if items else iter(())
        self._check_layer()   # the same call path on many items would hand them over
        try:
            value = fn(*items[0])
        except BaseException as error:
            return _raising(error)
        return iter((value,))

    def _check_layer(self) -> None:
        caller = _layer_of(threading.current_thread().name)
        if caller is not None and caller <= self.layer:
            raise LayeringBroken(f"{threading.current_thread().name} (layer {caller}) may not wait on "
                                 f"{self.name} (layer {self.layer})")

    def detach(self, fn: Callable, /, *args, **kwargs) -> Future:
        """Hand `fn` over without waiting for it (a fire-and-forget continuation)."""
        return super().submit(fn, *args, **kwargs)


def _raising(error: BaseException):
    raise error
    yield


_BY_NAME: dict[str, Pool] = {}


def _declare(name: str, workers: int, layer: int, purpose: str) -> Pool:
    pool = Pool(name, workers, layer, purpose)
    _BY_NAME[name] = pool
    return pool


def _layer_of(thread_name: str) -> int | None:
    """The layer of the pool a thread belongs to (threads are named `<pool>_<n>`), or None."""
    pool = _BY_NAME.get(thread_name.rpartition("_")[0])
    return pool.layer if pool is not None else None


def pools() -> list[Pool]:
    return list(_BY_NAME.values())


# -- layer 0: storage calls only ---------------------------------------------------------------
BATCH_WRITES = _declare("batch-write", 16, 0, "a batch upsert's transactions, one per partition")
BUCKET_READS = _declare("bucket-read", 32, 0, "a wide owner's buckets queried in their spread tables, "
                                                 "a queue's worker buckets for a listing")
COUNTDOWN_READS = _declare("countdown-read", 16, 0, "countdown rows looked up, or upserted, a bucket at a time")
TASK_READS = _declare("task-read", 32, 0, "task rows read at once: a creation's, a graph's, a group page's")
TASK_INSERTS = _declare("task-insert", 16, 0, "new task rows, a transaction per table and partition")
TASK_SAVES = _declare("task-save", 16, 0, "task status changes (a fan-out's), a transaction per table and partition")
INDEX_READS = _declare("index-read", 16, 0, "index entries read at once: findTasksAtIndex's, a graph's reused labels'")

# -- layer 1: storage patterns that read or write through layer 0 ------------------------------
COUNTDOWN_WRITES = _declare("countdown-write", 16, 1, "a countdown's rows added, a transaction per bucket")
DEPENDENCY_READS = _declare("dependency-reads", 16, 1, "a new task listed on the rows of tasks it waits on")

# -- layer 2: table adapters whose writes are countdowns ---------------------------------------
REQUIREMENT_WRITES = _declare("requirements", 16, 2, "a dependent's requirement rows, an owner at a time")
GRAPH_PART_WRITES = _declare("graph-parts", 16, 2, "a graph part's label rows and open-label counts")

# -- layer 3: the dependency tracker and the scheduler -----------------------------------------
DEPENDENTS = _declare("dependencies", 16, 3, "a resolved task's dependents satisfied and scheduled")
GRAPH_STARTS = _declare("graph-start", 16, 3, "a new graph's roots scheduled")

# -- layer 4: independent steps of one request or resolution -----------------------------------
CREATION_STEPS = _declare("task-create-step", 32, 4, "the independent steps of one createTask or graph part")
CLAIMS = _declare("claim", 32, 4, "the runs one claimWork takes, claimed at once")
RESOLUTION_GROUPS = _declare("resolution-group", 16, 4, "a resolution's group, graph and index entries, beside "
                             "its dependents")
GROUP_DESCRIPTIONS = _declare("ui-groups", 8, 4, "the browser's list of groups, each described from its first tasks")
FAN_OUTS = _declare("resolution-fan-out", 4, 4, "long fan-outs, after the call that resolved their task answered")
GROUP_PRIORITIES = _declare("group-priority", 16, 4, "changeTaskGroupPriority's tasks, each given the priority")

# -- layer 5: what resolves tasks from a pool -------------------------------------------------
GROUP_CANCELS = _declare("group-cancel", 16, 5, "cancelTaskGroup's (and a stalled group's) tasks, each resolved "
                                                 "and followed up")
WATCHDOG_ACTS = _declare("watchdog-act", 8, 5, "the watchdog's repairs in one group, each followed up")

# -- layer 6: the watchdog's looks, each reading a group's tasks and acting on them ------------
WATCHDOG_LOOKS = _declare("watchdog-look", 4, 6, "the task groups one watchdog sweep looks at at once")
