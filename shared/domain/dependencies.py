"""When a dependency counts as satisfied, which run resolutions announce a resolved task, and
who waits on a task.

- `all-completed`: a dependency is satisfied when it resolves completed. A failed or
  exception dependency leaves the dependent waiting, so a rerun of the dependency can still
  unblock it; scheduleTask forces it.
- `all-resolved`: any resolution satisfies it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.domain.runs import ReasonCreated, RunState
from shared.domain.task_status import TaskStatus

ALL_COMPLETED = "all-completed"
ALL_RESOLVED = "all-resolved"
MAX_DEPENDENCIES = 10_000
# Dependents a task's row lists itself, so that its resolution finds them without a query;
# a task with more has them all in the TaskDependencies table (a fan-out's root).
LISTED_DEPENDENTS = 16


def dependencies_of(definition: dict) -> list[str]:
    """The tasks a definition depends on, each once, in taskId order."""
    return sorted(set(definition["dependencies"]))


def sole_dependency(definition: dict) -> tuple[str, str] | tuple[()]:
    """The one task a definition waits on and its `requires`, or () if it waits on none or
    on several: what its row keeps of its terms, for a resolution that finds it listed."""
    dependencies = set(definition.get("dependencies", ()))   # absent only from the storage tests' rows
    return (next(iter(dependencies)), definition.get("requires", ALL_COMPLETED)) if len(dependencies) == 1 else ()


def terms_met(sole: tuple[str, str] | tuple[()] | None, required_id: str, run_state: RunState) -> bool:
    """Whether a task listed as waiting on `required_id` alone may be scheduled now that it
    resolved in `run_state`, by the terms its row keeps (`sole_dependency`): a listing may
    have been written by a createTask refused for another definition under the same taskId.
    None: a row written before rows kept them; its listing is taken at its word."""
    return sole is None or (bool(sole) and sole[0] == required_id and satisfies(sole[1], run_state))


@dataclass(frozen=True)
class Dependent:
    """A task waiting on another, with what its resolution needs to know of it."""
    task_id: str
    requires: str
    waits_on: int = 0   # how many tasks it depends on, one named twice counted once (0: not recorded)

    @classmethod
    def of(cls, task_id: str, definition: dict) -> Dependent:
        return cls(task_id, definition["requires"], len(set(definition["dependencies"])))

    def to_json(self) -> list:
        return [self.task_id, self.requires, self.waits_on]

    @classmethod
    def from_json(cls, value: list) -> Dependent:
        return cls(*value)


@dataclass(frozen=True)
class Listing:
    """Who waits on whom among tasks created together, as their rows list it.

    `dependents`: for each task some of them depend on, the dependents its row lists (in
    taskId order), or None if they are more than LISTED_DEPENDENTS (its row lists none: the
    TaskDependencies table holds them). `listed_by`: for each dependent, the tasks whose
    rows list it."""
    dependents: dict[str, tuple[Dependent, ...] | None]
    listed_by: dict[str, frozenset[str]]

    @classmethod
    def of(cls, definitions: dict[str, dict]) -> Listing:
        found: dict[str, list[Dependent]] = {}
        for task_id in sorted(definitions):
            definition = definitions[task_id]
            dependent = None   # made once: a fan-in's is listed by each of its thousands of dependencies
            for required in dependencies_of(definition):
                if required in definitions:
                    dependent = dependent or Dependent.of(task_id, definition)
                    found.setdefault(required, []).append(dependent)
        dependents = {required: tuple(found[required]) if len(found[required]) <= LISTED_DEPENDENTS else None
                      for required in found}
        listed_by: dict[str, set[str]] = {}
        for required, listed in dependents.items():
            for dependent in listed or ():
                listed_by.setdefault(dependent.task_id, set()).add(required)
        return cls(dependents, {task_id: frozenset(found) for task_id, found in listed_by.items()})


def satisfies(requires: str, run_state: RunState) -> bool:
    if requires == ALL_RESOLVED:
        return run_state.is_resolved
    return run_state is RunState.COMPLETED


def resolution_of(status: TaskStatus, run_id: int) -> RunState | None:
    """The state the task resolved in with run `run_id`, or None if that run did not
    resolve the task (it is still live, or the queue retried it with a new run)."""
    run = status.run(run_id)
    if run is None or not run.state.is_resolved:
        return None
    following = status.run(run_id + 1)
    if following is not None and following.reason_created in (ReasonCreated.RETRY, ReasonCreated.TASK_RETRY):
        return None
    return run.state


def run_settled(status: TaskStatus, run_id: int) -> bool:
    """Whether run `run_id` is over for good: it resolved, and so did the task, with it or
    with the runs the queue retried it with (a retried run's task is still live)."""
    while (run := status.run(run_id)) is not None and run.state.is_resolved:
        if resolution_of(status, run_id) is not None:
            return True
        run_id += 1
    return False


def became_resolved(before: TaskStatus, after: TaskStatus) -> int | None:
    """The run id with which `after` newly resolved the task, if this change resolved it."""
    if not after.state.is_resolved:
        return None
    if before.state.is_resolved and len(before.runs) == len(after.runs):
        return None
    return after.latest.run_id


def insertion_waves(definitions: dict[str, dict]) -> list[list[str]]:
    """The taskIds of tasks created together, in waves: every task comes in a later wave than
    all of its dependents in the batch.

    A task row is what lets a worker claim it and so resolve it; if a dependency's row were
    written before its dependent's, its resolution could be handled while the dependent did
    not exist yet, and the dependent would never be told (seed 003's lost message). Written
    dependents first, every resolution finds every dependent of the batch in place.
    A task's dependency on itself is no edge here (it only waits for scheduleTask).
    """
    waiting_on = {task_id: 0 for task_id in definitions}  # dependents not yet placed
    for task_id, definition in definitions.items():
        for required in set(definition["dependencies"]):
            if required in definitions and required != task_id:
                waiting_on[required] += 1
    waves, wave = [], [task_id for task_id, count in waiting_on.items() if count == 0]
    while wave:
        waves.append(wave)
        following = []
        for task_id in wave:
            for required in set(definitions[task_id]["dependencies"]):
                if required in waiting_on and required != task_id:
                    waiting_on[required] -= 1
                    if waiting_on[required] == 0:
                        following.append(required)
        wave = following
    placed = sum(len(wave) for wave in waves)
    if placed < len(definitions):  # a cycle (graphs refuse them earlier): the rest go last
        done = {task_id for wave in waves for task_id in wave}
        waves.append([task_id for task_id in definitions if task_id not in done])
    return waves
