"""The Queue's services wired to one storage account: what a binding asks for."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..config import Settings
from ..storage.account import StorageAccount
from ..storage.claim_table import ClaimTable
from ..storage.pending_table import PendingTable
from ..storage.task_group_table import TaskGroupTable
from ..storage.task_queue_table import TaskQueueTable
from ..storage.task_table import TaskTable
from .claims import Claims
from .credentials import CredentialIssuer
from .resolutions import Resolutions
from .task_groups import TaskGroups
from .task_queues import TaskQueues
from .task_updates import TaskUpdater
from .tasks import Tasks
from .work_signal import WorkSignal


@dataclass(frozen=True)
class Queue:
    tasks: Tasks
    claims: Claims
    resolutions: Resolutions
    task_groups: TaskGroups
    task_queues: TaskQueues

    @classmethod
    def build(cls, settings: Settings) -> Queue:
        account = StorageAccount(settings.storage_connection, settings.table_prefix)
        task_table, pending, claimed = TaskTable(account), PendingTable(account), ClaimTable(account)
        updater = TaskUpdater(task_table, pending, claimed, WorkSignal())
        groups = TaskGroups(TaskGroupTable(account), task_table)
        queues = TaskQueues(TaskQueueTable(account), pending, claimed)
        issuer = CredentialIssuer(settings.credentials_client_id, settings.credentials_access_token)
        return cls(
            tasks=Tasks(task_table, updater, groups, queues),
            claims=Claims(task_table, pending, updater, queues, issuer,
                          settings.claim_timeout, settings.claim_work_wait),
            resolutions=Resolutions(updater),
            task_groups=groups,
            task_queues=queues,
        )


_instance: Queue | None = None
_lock = threading.Lock()


def get_queue() -> Queue:
    """The process's Queue, built from the environment on first use (Functions reuse workers)."""
    global _instance
    with _lock:
        if _instance is None:
            _instance = Queue.build(Settings.from_environ())
        return _instance
