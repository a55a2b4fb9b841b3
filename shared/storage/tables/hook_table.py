"""The Hooks table: each hook's row, and a row per hook group that has hooks.

A hook's row: PartitionKey = `h.` + its hookGroupId, RowKey = its hookId (escaped: a hookId
may hold `/`), so a group's hooks are one partition's rows (listHooks). It holds the
definition (metadata, task template, schedule, triggerSchema, bindings) as JSON text, the
trigger token and the key of the scheduled fires' taskIds, both sealed by the service
(this table keeps the text it is given), the time of the
next scheduled fire ('' without a schedule), and the outbox of the hook's events. A removed
hook's row becomes a tombstone (`deleted`), holding its hook-deleted event, until that is out
and the row deleted (see `services.hooks.hooks`).

A group's row: PartitionKey `groups`, RowKey its hookGroupId, so listHookGroups reads one
partition. It is written before a hook of the group and again after (so that a removal that
found the group empty meanwhile cannot leave a hook without its group's row), and removed,
conditionally on the version read before finding the group empty, with its last hook.

Every change of a hook's row is conditional on its ETag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace


from azure.data.tables import UpdateMode

from shared.domain.task_events import Event
from shared.storage.client import lost_responses
from shared.storage.client.account import StorageAccount
from shared.storage.errors import AlreadyExists, ChangedSinceRead
from shared.storage.outbox import outbox
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns import long_text
from shared.storage.patterns.batches import delete_if_unchanged
from shared.storage.patterns.keys import bounded_key
from shared.storage.patterns.queries import any_row, first_rows, row_or_none

TABLE = "Hooks"
GROUPS = "groups"
_KEY_LIMIT = 500


@dataclass(frozen=True)
class HookRecord:
    hook_group_id: str
    hook_id: str
    definition: dict               # metadata, task, schedule, triggerSchema, bindings
    trigger_token: str             # sealed by the service: this table keeps it as given
    fire_key: str                  # likewise
    next_fire: str = ""            # the next scheduled fire (ISO), '' without a schedule
    deleted: bool = False          # a tombstone: removed, its hook-deleted event maybe not out yet
    etag: str | None = None
    outbox: tuple[Event, ...] = field(default=())

    @property
    def key(self) -> str:
        """The outbox key (`<hookGroupId>/<hookId>`: a hookGroupId holds no `/`)."""
        return f"{self.hook_group_id}/{self.hook_id}"


class HookTable:
    def __init__(self, account: StorageAccount, marks: PublicationMarks | None = None) -> None:
        self._table = account.table(TABLE)
        self.marks = marks or PublicationMarks(account)

    def get(self, hook_group_id: str, hook_id: str) -> HookRecord | None:
        row = row_or_none(self._table, *_keys(hook_group_id, hook_id))
        return _record(row) if row is not None else None

    def hooks(self, hook_group_id: str) -> list[HookRecord]:
        """The group's hooks and tombstones, by hookId."""
        return [_record(entity) for entity in self._table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": _partition(hook_group_id)})]

    def insert(self, hook: HookRecord) -> HookRecord:
        """AlreadyExists if the hook has a row (perhaps a tombstone)."""
        carried, hook = hook.outbox, self._prepared(hook)
        try:
            meta = lost_responses.write(self._table, _entity(hook), None)
        except AlreadyExists as error:
            self.marks.refused(hook.outbox, error, carried)
            raise
        return replace(hook, etag=meta.get("etag"))

    def save(self, hook: HookRecord) -> HookRecord:
        """Write `hook` over the row it was read from; ChangedSinceRead if it changed since."""
        carried, hook = hook.outbox, self._prepared(hook)
        try:
            meta = lost_responses.write(self._table, _entity(hook), hook.etag)
        except ChangedSinceRead as error:
            self.marks.refused(hook.outbox, error, carried)
            raise
        return replace(hook, etag=meta.get("etag"))

    def delete(self, hook: HookRecord) -> None:
        """Delete the row if it is still as read; ChangedSinceRead if not."""
        delete_if_unchanged(self._table, *_keys(hook.hook_group_id, hook.hook_id), hook.etag, hook.key)

    def _prepared(self, hook: HookRecord) -> HookRecord:
        return replace(hook, outbox=self.marks.prepare(self, hook.key, hook.outbox))

    # -- the outbox, for the event publisher ------------------------------------------------
    def load_outbox(self, key: str) -> tuple[tuple[Event, ...], str] | None:
        return outbox.load(self._table, *_keys(*key.split("/", 1)))

    def clear_outbox(self, key: str, published: list[str], etag: str,
                     kept: tuple[Event, ...] | None = None) -> None:
        outbox.clear(self._table, *_keys(*key.split("/", 1)), published, etag, kept)

    # -- groups -----------------------------------------------------------------------------
    def groups(self) -> list[str]:
        return [entity["hookGroupId"] for entity in first_rows(
            self._table, "PartitionKey eq @pk", {"pk": GROUPS}, 100_000, ["hookGroupId"])]

    def touch_group(self, hook_group_id: str) -> None:
        """Write the group's row (anew: its ETag changes, see the module's docstring)."""
        self._table.upsert_entity({"PartitionKey": GROUPS, "RowKey": _name(hook_group_id),
                                   "hookGroupId": hook_group_id}, mode=UpdateMode.REPLACE)

    def drop_group_if_empty(self, hook_group_id: str) -> None:
        """Remove the group's row if the group has no hook row left (read after its version)."""
        row = row_or_none(self._table, GROUPS, _name(hook_group_id), select=["RowKey"])
        if row is None:
            return
        etag = row.metadata["etag"]
        if any_row(self._table, "PartitionKey eq @pk", {"pk": _partition(hook_group_id)}):
            return
        try:
            delete_if_unchanged(self._table, GROUPS, _name(hook_group_id), etag, hook_group_id)
        except ChangedSinceRead:
            pass   # a hook of the group was written meanwhile


def _name(text: str) -> str:
    return bounded_key(text, _KEY_LIMIT)


def _partition(hook_group_id: str) -> str:
    return "h." + _name(hook_group_id)


def _keys(hook_group_id: str, hook_id: str) -> tuple[str, str]:
    return _partition(hook_group_id), _name(hook_id)


def _entity(hook: HookRecord) -> dict:
    partition, row = _keys(hook.hook_group_id, hook.hook_id)
    return {"PartitionKey": partition, "RowKey": row, "hookGroupId": hook.hook_group_id, "hookId": hook.hook_id,
            **long_text.to_columns("definition", json.dumps(hook.definition, separators=(",", ":"))),
            "token": hook.trigger_token, "fireKey": hook.fire_key,
            "nextFire": hook.next_fire, "deleted": hook.deleted, **outbox.to_columns(hook.outbox)}


def _record(entity) -> HookRecord:
    return HookRecord(entity["hookGroupId"], entity["hookId"], json.loads(long_text.from_columns("definition", entity)),
                      entity["token"], entity["fireKey"],
                      entity.get("nextFire") or "", bool(entity.get("deleted")), entity.metadata.get("etag"),
                      outbox.from_entity(entity))
