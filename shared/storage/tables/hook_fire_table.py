"""The HookLastFires table: every fire of a hook, success or error, newest first.

PartitionKey = the hook (`<hookGroupId>/<hookId>`, escaped), RowKey = `<inverted time>.<taskId>`
where the inverted time counts milliseconds down from the year 2286, so a key range reads a
hook's fires newest first, a page at a time. A scheduled fire is keyed by the time it was
scheduled for, so the same fire recorded twice (a timer that ran twice, a host that died
after creating the task) is one row. A row holds firedBy, taskId, taskCreateTime, result and
error (text, up to Taskcluster's 128 KiB). Fires older than a year are removed when the hook
next fires, and all of them with the hook.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from azure.data.tables import UpdateMode

from shared.domain.timestamps import parse_iso
from shared.storage.client.account import StorageAccount
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_rows
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import first_rows

TABLE = "HookLastFires"
KEPT = timedelta(days=365)       # as Taskcluster's expiry of last fires
MAX_ERROR_CHARS = 128 * 1024     # Taskcluster cuts an error's text there
_END_OF_TIME = 10 ** 13          # milliseconds since 1970: the year 2286
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class LastFire:
    hook_group_id: str
    hook_id: str
    fired_by: str
    task_id: str
    task_create_time: str
    result: str          # "success" or "error"
    error: str = ""
    at: str = ""         # what the row is keyed by: the scheduled time, else the fire's (default: task_create_time)

    def to_json(self) -> dict:
        return {"hookGroupId": self.hook_group_id, "hookId": self.hook_id, "firedBy": self.fired_by,
                "taskId": self.task_id, "taskCreateTime": self.task_create_time, "result": self.result,
                "error": self.error}


class HookFireTable:
    def __init__(self, account: StorageAccount) -> None:
        self._table = account.table(TABLE)

    def record(self, fire: LastFire) -> None:
        """Write the fire (again, if it was: the same row), and drop the hook's fires older
        than KEPT."""
        partition = _partition(fire.hook_group_id, fire.hook_id)
        self._table.upsert_entity({
            "PartitionKey": partition, "RowKey": _row_key(fire.at or fire.task_create_time, fire.task_id),
            "hookGroupId": fire.hook_group_id, "hookId": fire.hook_id, "firedBy": fire.fired_by,
            "taskId": fire.task_id, "taskCreateTime": fire.task_create_time, "result": fire.result,
            **long_text.to_columns("error", fire.error[:MAX_ERROR_CHARS])}, mode=UpdateMode.REPLACE)
        cutoff = _inverted(parse_iso(fire.task_create_time) - KEPT)
        old = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @cutoff",
                         {"pk": partition, "cutoff": f"{cutoff:013d}~"}, 100, ["RowKey"])
        if old:
            delete_rows(self._table, partition, [row["RowKey"] for row in old])

    def page(self, hook_group_id: str, hook_id: str, after: str, limit: int) -> tuple[list[LastFire], str | None]:
        """Up to `limit` fires, newest first, after the row key `after`; the key to continue
        after when more follow."""
        rows = first_rows(self._table, "PartitionKey eq @pk and RowKey gt @after",
                          {"pk": _partition(hook_group_id, hook_id), "after": after}, limit + 1)
        fires = [_fire(row) for row in rows[:limit]]
        return fires, rows[limit - 1]["RowKey"] if len(rows) > limit else None

    def forget(self, hook_group_id: str, hook_id: str) -> None:
        """Delete every fire of the hook."""
        partition = _partition(hook_group_id, hook_id)
        while rows := first_rows(self._table, "PartitionKey eq @pk", {"pk": partition}, 1000, ["RowKey"]):
            delete_rows(self._table, partition, [row["RowKey"] for row in rows])


def _partition(hook_group_id: str, hook_id: str) -> str:
    return bounded_key(f"{hook_group_id}/{hook_id}", 500)


def _inverted(moment: datetime) -> int:
    return _END_OF_TIME - int((moment - _EPOCH).total_seconds() * 1000)


def _row_key(at: str, task_id: str) -> str:
    return f"{_inverted(parse_iso(at)):013d}.{task_id}"


def _fire(row) -> LastFire:
    return LastFire(row["hookGroupId"], row["hookId"], row["firedBy"], row["taskId"], row["taskCreateTime"],
                    row["result"], long_text.from_columns("error", row))
