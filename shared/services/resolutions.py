"""reportCompleted, reportFailed and reportException: a worker resolving its run."""

from __future__ import annotations

from ..domain import lifecycle
from ..domain.runs import ReasonResolved
from ..domain.task_status import render_status
from ..domain.timestamps import utcnow
from .task_updates import TaskUpdater


class Resolutions:
    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater

    def completed(self, task_id: str, run_id: int) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved.COMPLETED)

    def failed(self, task_id: str, run_id: int) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved.FAILED)

    def exception(self, task_id: str, run_id: int, reason: str) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved(reason))

    def _resolve(self, task_id: str, run_id: int, reason: ReasonResolved) -> dict:
        now = utcnow()
        record = self.updater.apply(
            task_id, lambda status: lifecycle.resolve(status, run_id, reason, now), f"resolve as {reason.value}")
        return {"status": render_status(record.summary, record.status)}
