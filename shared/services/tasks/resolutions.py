"""reportCompleted, reportFailed and reportException: a worker resolving its run."""

from __future__ import annotations

from typing import Callable

from shared.domain import lifecycle
from shared.domain.runs import ReasonResolved
from shared.domain.task_status import render_status
from shared.domain.timestamps import utcnow
from shared.storage.tables.task_table import TaskRecord
from shared.services.tasks.task_updater import TaskUpdater

Authorize = Callable[[TaskRecord], None] | None   # the caller's scope check on the task as read


class Resolutions:
    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater

    def completed(self, task_id: str, run_id: int, authorize: Authorize = None) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved.COMPLETED, authorize)

    def failed(self, task_id: str, run_id: int, authorize: Authorize = None) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved.FAILED, authorize)

    def exception(self, task_id: str, run_id: int, reason: str, authorize: Authorize = None) -> dict:
        return self._resolve(task_id, run_id, ReasonResolved(reason), authorize)

    def _resolve(self, task_id: str, run_id: int, reason: ReasonResolved, authorize: Authorize) -> dict:
        now = utcnow()
        record = self.updater.apply(
            task_id, lambda status: lifecycle.resolve(status, run_id, reason, now), f"resolve as {reason.value}",
            authorize=authorize)
        return {"status": render_status(record.summary, record.status)}
