"""The Queue's services wired to one storage account: what a binding asks for (`get_services`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta

from shared.config import Settings
from shared.events.bus import EventBus
from shared.events.connect import event_bus, event_feeds
from shared.events.feeds import EventFeeds
from shared.storage.client.account import StorageAccount
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.pending_table import PendingTable
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.tables.task_group_table import TaskGroupTable
from shared.storage.tables.task_graph_table import TaskGraphTable
from shared.storage.tables.task_queue_table import TaskQueueTable
from shared.storage.tables.task_table import TaskTable
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.worker_table import WorkerTable
from shared.storage.tables.dependency_table import DependencyTable
from shared.storage.tables.requirement_table import RequirementTable
from shared.services.claims.work_claimer import Claims
from shared.services.claims.credentials import CredentialIssuer
from shared.services.event_publisher import EventPublisher
from shared.services.dependencies.dependency_tracker import Dependencies
from shared.services.sweeps.activity_expiry import TaskQueueExpiry, WorkerExpiry
from shared.services.sweeps.task_expiry import Expiration
from shared.services.scheduler.graph_parts import GraphParts
from shared.services.task_groups.group_feeds import GroupFeeds
from shared.services.dependencies.repairs import Repairs
from shared.services.dependencies.resolution_messages import ResolutionEvents
from shared.services.dependencies.dependency_resolver import ResolutionHandler
from shared.services.tasks.resolutions import Resolutions
from shared.services.tasks.task_creation import TaskCreation
from shared.services.scheduler.task_graphs import TaskGraphs
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.claims.task_queues import TaskQueues
from shared.services.tasks.task_updater import TaskUpdater
from shared.services.tasks.task_calls import Tasks
from shared.services.sweeps.claim_resolver import ClaimExpiry, Deadlines
from shared.services.claims.work_signal import WorkSignal
from shared.services.claims.workers import Workers
from shared.services.sweeps.artifact_expiry import INDEX as ARTIFACT_EXPIRES, ArtifactExpiry
from shared.services.artifacts.artifacts import Artifacts
from shared.services.artifacts.objects import Objects
from shared.storage.tables.artifact_table import ArtifactTable
from shared.storage.tables.object_table import ObjectTable


@dataclass(frozen=True)
class Services:
    tasks: Tasks
    claims: Claims
    resolutions: Resolutions
    task_groups: TaskGroups
    task_queues: TaskQueues
    dependencies: Dependencies
    resolution_handler: ResolutionHandler
    repairs: Repairs
    task_graphs: TaskGraphs
    claim_expiry: ClaimExpiry
    deadlines: Deadlines
    expiration: Expiration
    worker_expiry: WorkerExpiry
    task_queue_expiry: TaskQueueExpiry
    workers: Workers
    publisher: EventPublisher
    objects: Objects
    artifacts: Artifacts
    artifact_expiry: ArtifactExpiry
    group_feeds: GroupFeeds

    @property
    def bus(self) -> EventBus | None:
        return self.publisher.bus

    @classmethod
    def build(cls, settings: Settings, account: StorageAccount | None = None, bus: EventBus | None = None,
              feeds: EventFeeds | None = None) -> Services:
        """The services on `settings`' storage account, or on `account` (one of the same
        shape: the tests' in-memory one), publishing events on the bus the settings name, or
        on `bus`; with no bus, no events are kept or published. The browser's feeds read the
        bus the settings name, or `feeds`."""
        account = account or StorageAccount(settings.storage_connection, settings.table_prefix)
        bus = bus or event_bus(settings)
        marks = PublicationMarks(account)
        publisher = EventPublisher(bus, marks)
        task_table, pending, claimed = TaskTable(account, events=bus is not None, marks=marks), \
            PendingTable(account), ClaimTable(account)
        repair_queue = account.queue(settings.repair_queue)
        events = ResolutionEvents(account.queue(settings.resolved_queue), repair_queue,
                                  timedelta(seconds=settings.repair_delay))
        signal = WorkSignal(lambda queue_id, limit: len(pending.peek(queue_id, limit)))
        updater = TaskUpdater(task_table, pending, claimed, signal, events, publisher)
        queue_table, worker_table = TaskQueueTable(account), WorkerTable(account)
        queue_expiry = TaskQueueExpiry(TimeIndex(account, "queue-expires", bucket=timedelta(days=1)), queue_table)
        worker_expiry = WorkerExpiry(TimeIndex(account, "worker-expires", bucket=timedelta(days=1)), worker_table)
        queues = TaskQueues(queue_table, pending, claimed, queue_expiry)
        issuer = CredentialIssuer(settings.credentials_client_id, settings.credentials_access_token)
        edges, requirements = DependencyTable(account), RequirementTable(account)
        expiries = TimeIndex(account, "expires", bucket=timedelta(days=1))
        dependencies = Dependencies(task_table, edges, requirements, updater, expiries)
        expiry = ClaimExpiry(claimed, updater)
        group_table = TaskGroupTable(account, marks)
        graph_table = TaskGraphTable(account, group_table)
        groups = TaskGroups(group_table, task_table, publisher)
        blobs = account.blobs(settings.artifacts_container)
        expiration = Expiration(expiries, task_table, edges, requirements, group_table, graph_table, blobs)
        deadlines = Deadlines(TimeIndex(account, "deadline", bucket=timedelta(minutes=5)), updater, expiration,
                              group_table)
        creation = TaskCreation(task_table, updater, groups, queues, dependencies, deadlines)
        parts = GraphParts(graph_table, creation, dependencies, events, account.queue(settings.graph_queue),
                           timedelta(seconds=settings.repair_delay))
        graphs = TaskGraphs(graph_table, task_table, creation, updater, parts)
        workers = Workers(worker_table, claimed, updater, worker_expiry)
        handler = ResolutionHandler(task_table, dependencies, groups, graphs, claimed, events, publisher)
        updater.on_resolved = handler.follow_up
        artifact_expiries = TimeIndex(account, ARTIFACT_EXPIRES, bucket=timedelta(days=1))
        objects = Objects(ObjectTable(account), blobs, artifact_expiries)
        artifacts = Artifacts(ArtifactTable(account, marks), task_table, objects, blobs, artifact_expiries, issuer,
                              publisher, settings.public_url or LOCAL_ROOT_URL)
        return cls(
            tasks=Tasks(task_table, updater, groups, dependencies, creation),
            claims=Claims(task_table, pending, claimed, updater, queues, issuer, workers,
                          settings.claim_timeout, settings.claim_work_wait),
            resolutions=Resolutions(updater),
            task_groups=groups,
            task_queues=queues,
            dependencies=dependencies,
            resolution_handler=handler,
            repairs=Repairs(repair_queue, account.queue(settings.repair_queue + "-poison"), handler, dependencies,
                            parts),
            task_graphs=graphs,
            claim_expiry=expiry,
            deadlines=deadlines,
            expiration=expiration,
            worker_expiry=worker_expiry,
            task_queue_expiry=queue_expiry,
            workers=workers,
            publisher=publisher,
            objects=objects,
            artifacts=artifacts,
            artifact_expiry=ArtifactExpiry(artifact_expiries, artifacts, objects),
            group_feeds=GroupFeeds(feeds or event_feeds(settings)),
        )


# Where clients reach the app when QUEUE_PUBLIC_URL does not say: `make run`'s address.
LOCAL_ROOT_URL = "http://127.0.0.1:7071"
_instance: Services | None = None
_lock = threading.Lock()


def get_services() -> Services:
    """The process's services, built from the environment on first use (Functions reuse workers)."""
    global _instance
    with _lock:
        if _instance is None:
            _instance = Services.build(Settings.from_environ())
        return _instance
