"""Task groups: membership, the group's schedulerId and expiry, and listing."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..domain.errors import Conflict, InvalidInput, NotFound
from ..domain.task_status import render_status
from ..domain.timestamps import parse_iso
from ..storage.errors import AlreadyExists, ChangedSinceRead
from ..storage.task_group_table import TaskGroupRecord, TaskGroupTable
from ..storage.task_table import TaskTable

DEFAULT_PAGE = 1000
_READERS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="group-read")


def encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def decode_token(token: str | None) -> str:
    if not token:
        return ""
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"continuationToken: {token!r} is not a token this API issued") from exc


class TaskGroups:
    def __init__(self, groups: TaskGroupTable, tasks: TaskTable) -> None:
        self.groups = groups
        self.tasks = tasks

    def join(self, definition: dict, task_id: str) -> None:
        """Make the task a member of its group, creating the group or extending its expiry.

        A group's schedulerId is fixed by its first task, and a sealed group takes no more.
        """
        group = self._ensure(definition)
        if group.scheduler_id != definition["schedulerId"]:
            raise Conflict(f"Task group {group.task_group_id} has schedulerId {group.scheduler_id!r}; "
                           f"task {task_id} has schedulerId {definition['schedulerId']!r}")
        if group.sealed:
            raise Conflict(f"Task group {group.task_group_id} was sealed at {group.sealed}; no tasks can be added")
        self._extend_expiry(group, definition["expires"])
        self.groups.add_member(group.task_group_id, task_id)

    def _ensure(self, definition: dict) -> TaskGroupRecord:
        fresh = TaskGroupRecord(definition["taskGroupId"], definition["schedulerId"], definition["expires"])
        try:
            return self.groups.insert(fresh)
        except AlreadyExists:
            return self.groups.load(fresh.task_group_id)

    def _extend_expiry(self, group: TaskGroupRecord, expires: str) -> None:
        while parse_iso(group.expires) < parse_iso(expires):
            try:
                self.groups.save(replace(group, expires=expires))
                return
            except ChangedSinceRead:
                group = self.groups.load(group.task_group_id)

    def member_resolved(self, task_group_id: str, task_id: str, now: str) -> bool:
        """Note that a member resolved; True when that made the whole group resolved."""
        self.groups.member_resolved(task_group_id, task_id)
        if self.groups.unresolved(task_group_id):
            return False
        group = self.groups.load(task_group_id)
        while group is not None and group.resolved < now:
            try:
                self.groups.save(replace(group, resolved=now))
                return True
            except ChangedSinceRead:
                group = self.groups.load(task_group_id)
        return False

    def get(self, task_group_id: str) -> dict:
        group = self.groups.load(task_group_id)
        if group is None:
            raise NotFound(f"Task group {task_group_id} not found")
        out = {"taskGroupId": group.task_group_id, "schedulerId": group.scheduler_id, "expires": group.expires}
        if group.sealed:
            out["sealed"] = group.sealed
        return out

    def list(self, task_group_id: str, continuation: str | None, limit: int | None) -> dict:
        out = self.get(task_group_id)
        out.pop("sealed", None)
        limit = min(limit or DEFAULT_PAGE, DEFAULT_PAGE)
        members = self.groups.members(task_group_id, decode_token(continuation), limit + 1)
        page = members[:limit]
        records = _READERS.map(lambda task_id: self.tasks.load(task_id, with_definition=True), page)
        out["tasks"] = [{"task": record.definition, "status": render_status(record.summary, record.status)}
                        for record in records if record is not None]
        if len(members) > limit:
            out["continuationToken"] = encode_token(page[-1])
        return out
