"""The mutable part of a task (its runs and retries) and how Taskcluster shows it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.domain.runs import Run, RunState, TaskState


@dataclass(frozen=True)
class TaskStatus:
    """Everything about a task that changes after creation.

    `retries` and `deadline` are copied from the definition because transitions need them.
    """

    task_id: str
    retries: int
    retries_left: int
    deadline: str
    runs: tuple[Run, ...] = ()

    @classmethod
    def new(cls, task_id: str, definition: dict) -> TaskStatus:
        return cls(
            task_id=task_id,
            retries=definition["retries"],
            retries_left=definition["retries"],
            deadline=definition["deadline"],
        )

    @property
    def latest(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def state(self) -> TaskState:
        return TaskState(self.latest.state.value) if self.runs else TaskState.UNSCHEDULED

    @property
    def pending_run(self) -> Run | None:
        latest = self.latest
        return latest if latest and latest.state is RunState.PENDING else None

    @property
    def running_run(self) -> Run | None:
        latest = self.latest
        return latest if latest and latest.state is RunState.RUNNING else None

    def run(self, run_id: int) -> Run | None:
        return self.runs[run_id] if 0 <= run_id < len(self.runs) else None

    def with_runs(self, *runs: Run, **changes) -> TaskStatus:
        """A copy whose runs with the given ids are replaced (or appended when new)."""
        current = list(self.runs)
        for run in runs:
            if run.run_id < len(current):
                current[run.run_id] = run
            else:
                current.append(run)
        return replace(self, runs=tuple(current), **changes)

    def runs_json(self) -> list[dict]:
        return [run.to_json() for run in self.runs]


_STATUS_FIELDS = (
    "provisionerId", "workerType", "taskQueueId", "schedulerId", "projectId",
    "taskGroupId", "priority", "deadline", "expires",
)


def render_status(definition: dict, status: TaskStatus) -> dict:
    """Taskcluster's task status structure."""
    out = {"taskId": status.task_id}
    out.update({name: definition[name] for name in _STATUS_FIELDS})
    out["retriesLeft"] = status.retries_left
    out["state"] = status.state.value
    out["runs"] = status.runs_json()
    return out
