"""The services wired to one storage account: what a binding asks for (`get_services`).

Everything is handed what it needs at construction, in the order below; nothing is set on an
object after it is made. The one loop in the object graph is a resolution's follow-up: the
dependency resolver schedules dependents through the dependency tracker, whose updater must
not call back into the resolver. So there are two updaters over the same tables:
- `scheduling`, for the dependency tracker, creation and graphs, which only ever make runs
  pending; a resolution through it (there is none) would go to the resolved queue;
- `updater`, for every call and sweep that can resolve a task, whose follow-up is the
  dependency resolver in the same process.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Callable

from shared.auth.clients import Realm, app_realm
from shared.config import Settings
from shared.events.bus import EventBus
from shared.events.connect import event_bus, event_feeds
from shared.events.feeds import EventFeeds
from shared.services.artifacts.artifacts import Artifacts
from shared.services.auth.audit_history import INDEX as AUDIT_EXPIRES, AuditHistory, AuditHistoryPurge
from shared.services.auth.client_calls import ClientCalls
from shared.services.auth.client_expiry import ClientExpiry
from shared.services.auth.directory import Directory
from shared.services.auth.role_calls import RoleCalls
from shared.services.artifacts.objects import Objects
from shared.services.claims.credentials import CredentialIssuer
from shared.services.claims.task_queues import TaskQueues
from shared.services.claims.work_claimer import WorkClaimer
from shared.services.claims.work_signal import WorkSignal
from shared.services.claims.workers import Workers
from shared.services.dependencies.dependency_resolver import DependencyResolver
from shared.services.dependencies.dependency_tracker import DependencyTracker
from shared.services.dependencies.repairs import Repairs
from shared.services.dependencies.resolution_messages import ResolutionMessages
from shared.services.event_publisher import EventPublisher
from shared.services.hooks.firing import HookFiring
from shared.services.hooks.hook_secrets import HookSecrets
from shared.services.hooks.hooks import Hooks
from shared.services.hooks.scheduler import HookScheduler
from shared.services.index.index import Index
from shared.services.index.index_expiry import IndexExpiry
from shared.services.index.indexer import Indexer
from shared.services.scheduler.graph_parts import GraphParts
from shared.services.scheduler.reuse import GraphReuse
from shared.services.scheduler.task_graphs import TaskGraphs
from shared.services.secrets.encryption import KeyConfigError, SecretBox, sealing_box
from shared.services.secrets.secrets import SecretExpiry, Secrets
from shared.services.sweeps.activity_expiry import TaskQueueExpiry, WorkerExpiry
from shared.services.artifacts.expiry_index import INDEX as ARTIFACT_EXPIRES
from shared.services.sweeps.artifact_expiry import ArtifactExpiry
from shared.services.sweeps.claim_resolver import ClaimResolver
from shared.services.sweeps.deadline_resolver import DeadlineResolver, DeadlineWatch
from shared.services.sweeps.task_expiry import TaskExpiry
from shared.services.sweeps.watchdog import INDEX as GROUP_WATCH, GroupWatch, Watchdog
from shared.services.task_groups.group_feeds import GroupFeeds
from shared.services.task_groups.stall_reports import StallReports
from shared.services.task_groups.task_groups import TaskGroups
from shared.services.task_groups.worker_presence import SeenWorkers, WorkerPresence
from shared.services.tasks.priorities import Priorities
from shared.services.tasks.resolutions import Resolutions
from shared.services.tasks.task_calls import TaskCalls
from shared.services.tasks.task_creation import TaskCreation
from shared.services.tasks.task_updater import TaskUpdater
from shared.runtime.clock import clock_of
from shared.services.worker_manager.launches import Launches
from shared.services.worker_manager.manager import WorkerManager
from shared.services.worker_manager.pool_errors import PoolErrors
from shared.services.worker_manager.pool_presence import PoolPresence
from shared.providers.registry import Providers
from shared.services.worker_manager.provisioner import Provisioner
from shared.services.worker_manager.removed_workers import RemovedWorkers
from shared.services.worker_manager.wake_ups import WakeUps
from shared.services.worker_manager.worker_care import WorkerCare
from shared.services.worker_manager.worker_credentials import WorkerCredentials
from shared.services.worker_manager.worker_pools import WorkerPools
from shared.services.worker_manager.worker_states import WorkerStates
from shared.services.worker_manager.workers import PoolWorkers
from shared.storage.client.account import StorageAccount
from shared.storage.outbox.publication_marks import PublicationMarks
from shared.storage.patterns.time_index import TimeIndex
from shared.storage.tables.artifact_table import ArtifactTable
from shared.storage.tables.audit_table import AuditTable
from shared.storage.tables.claim_table import ClaimTable
from shared.storage.tables.client_table import ClientTable
from shared.storage.tables.dependency_table import DependencyTable
from shared.storage.tables.hook_fire_table import HookFireTable
from shared.storage.tables.hook_table import HookTable
from shared.storage.tables.index_table import IndexTable
from shared.storage.tables.object_table import ObjectTable
from shared.storage.tables.pending_table import PendingTable
from shared.storage.tables.pool_worker_table import PoolWorkerTable
from shared.storage.tables.role_table import RoleTable
from shared.storage.tables.requirement_table import RequirementTable
from shared.storage.tables.secret_table import SecretTable
from shared.storage.tables.task_graph_table import TaskGraphTable
from shared.storage.tables.task_group_table import TaskGroupTable
from shared.storage.tables.task_queue_table import TaskQueueTable
from shared.storage.tables.task_table import TaskTable
from shared.storage.tables.worker_pool_error_table import WorkerPoolErrorTable
from shared.storage.tables.worker_pool_table import WorkerPoolTable
from shared.storage.tables.worker_table import WorkerTable

DAY, HOUR, FIVE_MINUTES = timedelta(days=1), timedelta(hours=1), timedelta(minutes=5)
log = logging.getLogger("queue.wiring")


@dataclass(frozen=True)
class Services:
    task_calls: TaskCalls
    priorities: Priorities
    work_claimer: WorkClaimer
    resolutions: Resolutions
    task_groups: TaskGroups
    task_queues: TaskQueues
    dependency_tracker: DependencyTracker
    dependency_resolver: DependencyResolver
    repairs: Repairs
    task_graphs: TaskGraphs
    graph_parts: GraphParts
    claim_resolver: ClaimResolver
    deadline_resolver: DeadlineResolver
    task_expiry: TaskExpiry
    worker_expiry: WorkerExpiry
    task_queue_expiry: TaskQueueExpiry
    workers: Workers
    event_publisher: EventPublisher
    objects: Objects
    artifacts: Artifacts
    artifact_expiry: ArtifactExpiry
    group_feeds: GroupFeeds
    watchdog: Watchdog
    stall_reports: StallReports
    hooks: Hooks
    hook_scheduler: HookScheduler
    index: Index
    index_expiry: IndexExpiry
    secrets: Secrets
    secret_expiry: SecretExpiry
    worker_manager: WorkerManager
    directory: Directory
    clients: ClientCalls
    client_expiry: ClientExpiry
    roles: RoleCalls
    audit_history: AuditHistory
    audit_purge: AuditHistoryPurge

    @property
    def bus(self) -> EventBus | None:
        return self.event_publisher.bus

    @property
    def sweeps(self) -> tuple:
        """The expiry sweeps, in the order the expiration timer runs them."""
        return (self.task_expiry, self.worker_expiry, self.task_queue_expiry, self.artifact_expiry, self.index_expiry,
                self.secret_expiry, self.client_expiry, self.audit_purge)

    @classmethod
    def build(cls, settings: Settings, account: StorageAccount | None = None, bus: EventBus | None = None,
              feeds: EventFeeds | None = None, providers: Providers | None = None) -> Services:
        """The services on `settings`' storage account, or on `account` (one of the same
        shape: the tests' in-memory one), publishing events on the bus the settings name, or
        on `bus`; with no bus, no events are kept or published. The browser's feeds read the
        bus the settings name, or `feeds`. The worker manager's providers are those the
        environment configures, or `providers`."""
        account = account or StorageAccount(settings.storage_connection, settings.table_prefix,
                                            settings.storage_identity)
        bus = bus or event_bus(settings)
        marks = PublicationMarks(account)
        publisher = EventPublisher(bus, marks)
        repair_delay = timedelta(seconds=settings.repair_delay)
        stall = timedelta(seconds=settings.watchdog_stall)

        # Tables and indexes
        audit_table, audit_expiries = AuditTable(account), TimeIndex(account, AUDIT_EXPIRES, bucket=DAY)
        audit = AuditHistory(audit_table, audit_expiries)
        task_table = TaskTable(account, events=bus is not None, marks=marks)
        pending_table, claim_table = PendingTable(account), ClaimTable(account)
        queue_table, worker_table = TaskQueueTable(account), WorkerTable(account)
        dependency_table, requirement_table = DependencyTable(account), RequirementTable(account)
        group_table = TaskGroupTable(account, marks)
        graph_table = TaskGraphTable(account, group_table)
        task_expiries = TimeIndex(account, "expires", bucket=DAY)
        artifact_expiries = TimeIndex(account, ARTIFACT_EXPIRES, bucket=DAY)
        blobs = account.blobs(settings.artifacts_container)

        # Messages, signals, and what is indexed for the sweeps
        repair_queue = account.queue(settings.repair_queue)
        messages = ResolutionMessages(account.queue(settings.resolved_queue), repair_queue, repair_delay)
        signal = WorkSignal(lambda queue_id, limit: len(pending_table.peek(queue_id, limit)))
        queue_expiry = TaskQueueExpiry(TimeIndex(account, "queue-expires", bucket=DAY), queue_table)
        worker_expiry = WorkerExpiry(TimeIndex(account, "worker-expires", bucket=DAY), worker_table)
        deadline_index = TimeIndex(account, "deadline", bucket=FIVE_MINUTES)
        watch_index = TimeIndex(account, GROUP_WATCH, bucket=FIVE_MINUTES)
        task_expiry = TaskExpiry(task_expiries, task_table, dependency_table, requirement_table, group_table,
                                 graph_table, blobs)

        # What makes runs pending: creation, the dependency tracker, the scheduler
        scheduling = TaskUpdater(task_table, pending_table, claim_table, signal, messages, publisher,
                                 follow_up=messages)
        queues = TaskQueues(queue_table, pending_table, claim_table, queue_expiry, task_table)
        tracker = DependencyTracker(task_table, dependency_table, requirement_table, scheduling, task_expiries, messages)
        groups = TaskGroups(group_table, task_table, publisher)
        deadline_watch = DeadlineWatch(deadline_index)
        creation = TaskCreation(task_table, scheduling, groups, queues, tracker, deadline_watch,
                                GroupWatch(watch_index, stall), messages, publisher, signal)
        parts = GraphParts(graph_table, creation, tracker, messages, account.queue(settings.graph_queue), repair_delay)
        index_table = IndexTable(account)
        index_expiry = IndexExpiry(TimeIndex(account, "index-expires", bucket=DAY), index_table)
        graphs = TaskGraphs(graph_table, task_table, creation, groups, scheduling, parts,
                            GraphReuse(graph_table, index_table, task_table))

        # What follows a resolution, and the updater of every call and sweep that resolves
        resolver = DependencyResolver(task_table, tracker, groups, graphs, claim_table, messages, publisher,
                                      Indexer(index_table, index_expiry, task_table))
        updater = TaskUpdater(task_table, pending_table, claim_table, signal, messages, publisher,
                              follow_up=resolver)
        issuer = CredentialIssuer(settings.credentials_client_id, settings.credentials_access_token)
        workers = Workers(worker_table, claim_table, updater, worker_expiry)
        root_url = settings.public_url or LOCAL_ROOT_URL
        worker_manager = _worker_manager(settings, account, publisher, signal, pending_table, claim_table,
                                         worker_table, workers, issuer, settings.worker_manager_root_url or root_url,
                                         providers, audit)
        objects = Objects(ObjectTable(account), blobs, artifact_expiries)
        task_calls = TaskCalls(task_table, updater, groups, tracker, creation)
        claim_resolver = ClaimResolver(claim_table, updater, messages)
        # Whether anything serves a task queue, as the Queue knows it (its workers' last
        # claims); the watchdog asks the worker manager's pools first (PoolPresence).
        presence: WorkerPresence = SeenWorkers(worker_table, claim_table)
        stall_reports = StallReports(groups, stall)
        artifacts = Artifacts(ArtifactTable(account, marks), task_table, objects, blobs, artifact_expiries, issuer,
                              publisher, root_url)

        box = cache(lambda: sealing_box(settings.secrets_encryption_keys, settings.credentials_access_token))
        client_table, role_table = ClientTable(account), RoleTable(account)
        directory = Directory(client_table, role_table, box)
        client_expiry = ClientExpiry(TimeIndex(account, "client-expires", bucket=DAY), client_table, audit)
        realm = cache(lambda: app_realm(settings, directory))
        hooks, hook_scheduler = _hooks(settings, account, publisher, task_calls, task_table, box, realm, audit)
        secret_table = SecretTable(account)
        secret_expiry = SecretExpiry(TimeIndex(account, "secret-expires", bucket=DAY), secret_table, audit)
        return cls(
            task_calls=task_calls,
            priorities=Priorities(task_table, pending_table, updater, groups, publisher),
            work_claimer=WorkClaimer(task_table, pending_table, claim_table, updater, signal, queues, issuer, workers,
                                     settings.claim_timeout, settings.claim_work_wait),
            resolutions=Resolutions(updater),
            task_groups=groups,
            task_queues=queues,
            dependency_tracker=tracker,
            dependency_resolver=resolver,
            repairs=Repairs(repair_queue, account.queue(settings.repair_queue + "-poison"), resolver, tracker, parts),
            task_graphs=graphs,
            graph_parts=parts,
            claim_resolver=claim_resolver,
            deadline_resolver=DeadlineResolver(deadline_index, updater, task_expiry, group_table),
            task_expiry=task_expiry,
            worker_expiry=worker_expiry,
            task_queue_expiry=queue_expiry,
            workers=workers,
            event_publisher=publisher,
            objects=objects,
            artifacts=artifacts,
            artifact_expiry=ArtifactExpiry(artifact_expiries, artifacts, objects),
            group_feeds=GroupFeeds(feeds or event_feeds(settings)),
            watchdog=Watchdog(watch_index, deadline_watch, group_table, task_table, tracker, claim_resolver,
                              PoolPresence(worker_manager.pools, worker_manager.providers, presence), stall_reports,
                              task_calls.cancel_many, stall),
            stall_reports=stall_reports,
            hooks=hooks,
            hook_scheduler=hook_scheduler,
            index=Index(index_table, index_expiry, issuer, settings.public_url or LOCAL_ROOT_URL),
            index_expiry=index_expiry,
            secrets=Secrets(secret_table, secret_box(settings), secret_expiry, audit),
            secret_expiry=secret_expiry,
            worker_manager=worker_manager,
            directory=directory,
            clients=ClientCalls(client_table, directory, box, lambda scopes: realm().expand(scopes), client_expiry,
                                audit, lambda: realm().configured_clients()),
            client_expiry=client_expiry,
            roles=RoleCalls(role_table, directory, lambda scopes: realm().expand(scopes),
                            lambda roles: realm().check_roles(roles), audit),
            audit_history=audit,
            audit_purge=AuditHistoryPurge(audit_expiries, audit_table),
        )


def _hooks(settings: Settings, account: StorageAccount, publisher: EventPublisher, task_calls: TaskCalls,
           task_table: TaskTable, box: Callable[[], SecretBox], realm: Callable[[], Realm],
           audit: AuditHistory) -> tuple[Hooks, HookScheduler]:
    """The hooks service and its timer's scheduler: tasks created through the Queue's calls in
    a hook's role, checked against what the roles grant it (configured or stored)."""
    clock, fire_index = clock_of(settings.hooks_clock_file), TimeIndex(account, "hook-fires", bucket=HOUR)
    sealed = HookSecrets(box)
    fires = HookFireTable(account)
    firing = HookFiring(task_calls, lambda role: realm().expand((role,)), fires, sealed, clock)
    hooks = Hooks(HookTable(account, publisher.marks), fires, fire_index, firing, sealed, task_table, publisher, clock,
                  audit)
    return hooks, HookScheduler(fire_index, hooks, clock)


def _worker_manager(settings: Settings, account: StorageAccount, publisher: EventPublisher, signal: WorkSignal,
                    pending_table: PendingTable, claim_table: ClaimTable, worker_table: WorkerTable,
                    queue_workers: Workers, issuer: CredentialIssuer, root_url: str,
                    providers: Providers | None, audit: AuditHistory) -> WorkerManager:
    """The worker manager on the queue's tables: its wake-ups hear of the runs the work
    signal hears of, its resolver releases runs through the queue's workers."""
    marks = publisher.marks
    pool_table, pool_workers = WorkerPoolTable(account, marks), PoolWorkerTable(account, marks)
    if providers is None:
        broker = {"EVENTS_AMQP_URL": settings.events_amqp_url} if settings.events_amqp_url else {}
        providers = Providers.from_settings(os.environ, root_url, broker)
    wake_ups = WakeUps(account.queue(settings.worker_manager_queue), pool_table.ids, providers.starts_workers, signal)
    states = WorkerStates(pool_workers, publisher)
    errors = PoolErrors(WorkerPoolErrorTable(account, marks), publisher)
    pools = WorkerPools(pool_table, pool_workers, providers, publisher, wake_ups, errors, audit)
    removed = RemovedWorkers(states, providers, claim_table, queue_workers, wake_ups)
    care = WorkerCare(states, providers, removed, errors, pool_table, wake_ups,
                      lambda pool, group, worker: getattr(worker_table.load(pool, group, worker), "last_date_active",
                                                          None))
    provisioner = Provisioner(pool_table, pool_workers, providers, care, Launches(states, providers, root_url), errors,
                              wake_ups, lambda queue_id, limit: (len(pending_table.peek(queue_id, limit)),
                                                                 claim_table.count(queue_id)))
    return WorkerManager(pools=pools, workers=PoolWorkers(states, pools, providers, removed),
                         credentials=WorkerCredentials(states, pools, providers, issuer), errors=errors,
                         provisioner=provisioner, wake_ups=wake_ups, providers=providers)


def secret_box(settings: Settings) -> SecretBox | None:
    """The secrets' keys, or None when none is set or the setting cannot be read (the
    secrets service then says so; the rest of the app serves on)."""
    if not settings.secrets_encryption_keys.strip():
        return None
    try:
        return SecretBox.from_setting(settings.secrets_encryption_keys)
    except KeyConfigError as error:   # its message never shows a key
        log.error("%s; the secrets service is unavailable", error)
        return None


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
