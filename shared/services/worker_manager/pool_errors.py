"""A pool's errors (listWorkerPoolErrors): those of its provider (a quota reached, a start
refused, a cloud that did not answer, a start that timed out), recorded by the provisioner,
and those its workers report (reportWorkerError). Each is announced on `worker-pool-error`
and kept for a week, as Taskcluster keeps them. Errors are public: what is recorded is a
provider's message and figures, never a secret.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping

from shared.domain.ids import new_slugid
from shared.domain.timestamps import parse_iso, to_iso
from shared.domain.worker_manager_events import pool_error
from shared.services.event_publisher import EventPublisher
from shared.storage.tables.worker_pool_error_table import WorkerPoolErrorRecord, WorkerPoolErrorTable

log = logging.getLogger("worker_manager.errors")
KEPT = timedelta(days=7)
LAUNCH_CONFIG = "default"   # our providers have one launch configuration each, for every pool


class PoolErrors:
    def __init__(self, table: WorkerPoolErrorTable, publisher: EventPublisher) -> None:
        self.table = table
        self.publisher = publisher

    def record(self, worker_pool_id: str, provider_id: str, kind: str, title: str, description: str,
               extra: Mapping[str, Any], now: datetime, worker_group: str | None = None,
               worker_id: str | None = None) -> WorkerPoolErrorRecord:
        error_id, reported = new_slugid(), to_iso(now)
        events = ()
        if self.publisher.publishing:
            events = (pool_error(worker_pool_id, provider_id, error_id, kind, title, reported, worker_group,
                                 worker_id),)
        record = self.table.insert(WorkerPoolErrorRecord(worker_pool_id, error_id, reported, kind, title[:128],
                                                         description[:10240], dict(extra), events))
        self.publisher.written(self.table, record)
        log.warning("worker pool %s: %s: %s", worker_pool_id, kind, description[:300],
                    extra={"workerPoolId": worker_pool_id, "errorId": error_id, "action": "pool-error"})
        return record

    def list(self, worker_pool_id: str, after: str, limit: int, error_id: str | None = None
             ) -> tuple[dict, str | None]:
        """A page of the pool's errors, newest first, and its last key when more follow."""
        rows = self.table.page(worker_pool_id, after, limit + 1, error_id)
        return ({"workerPoolErrors": [record.to_json() for _, record in rows[:limit]]},
                rows[limit - 1][0] if len(rows) > limit else None)

    def stats(self, worker_pool_ids: Iterable[str], now: datetime) -> dict:
        """workerPoolErrorStats' totals over the pools' errors: by day for the last 7 days and by
        hour for the last 24 hours (every day and hour named, 0 where none), by title, by
        `extra.code` ("other" without one), by pool and by launch configuration."""
        errors = [error for pool in worker_pool_ids for error in self.table.all(pool)]
        days = _periods(now.replace(hour=0, minute=0, second=0, microsecond=0), timedelta(days=1), 7)
        hours = _periods(now.replace(minute=0, second=0, microsecond=0), timedelta(hours=1), 24)
        for error in errors:
            reported = parse_iso(error.reported)
            for periods, length in ((days, timedelta(days=1)), (hours, timedelta(hours=1))):
                start = next((start for start in periods if start <= reported < start + length), None)
                if start is not None:
                    periods[start] += 1
        return {"total": sum(days.values()), "daily": {to_iso(day): count for day, count in days.items()},
                "hourly": {to_iso(hour): count for hour, count in hours.items()},
                "title": dict(Counter(error.title for error in errors)),
                "code": dict(Counter(str(error.extra.get("code", "other")) for error in errors)),
                "workerPool": dict(Counter(error.worker_pool_id for error in errors)),
                "launchConfig": dict(Counter(LAUNCH_CONFIG for _ in errors))}

    def drop_expired(self, worker_pool_id: str, now: datetime) -> int:
        return self.table.drop_older_than(worker_pool_id, to_iso(now - KEPT))


def _periods(last: datetime, length: timedelta, count: int) -> dict[datetime, int]:
    """`count` periods of `length` ending with the one that starts at `last`, oldest first."""
    return {last - length * back: 0 for back in reversed(range(count))}
