"""Queue triggers: poll a storage queue, run the function per message, delete on success,
retry after `visibilityTimeout` on failure, and move a message to `<queue>-poison` after
`maxDequeueCount` attempts, as the Functions host does. A trigger's `connection` names an app
setting holding a connection string, or, as in Azure, the section of an identity-based
connection (`<connection>__queueServiceUri`, `__accountName`, `__credential`...)."""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.functions.queue import QueueMessage  # not func.QueueMessage: that one takes no dequeue_count
from azure.storage.queue import QueueClient

from shared.storage.client.account import shared_transport
from shared.storage.client.identity import IdentityConnection, identity_settings
from shared.storage.client.tokens import shared_token

from devhost.host_config import HostConfig
from devhost.settings import MissingSetting

log = logging.getLogger("devhost.queue")
PROCESSING_HOLD = 300  # seconds a received message stays hidden while its function runs


def queue_client(settings: dict[str, str], connection: str, queue_name: str, transport) -> QueueClient:
    """The queue `queue_name` of the storage the setting (or section) `connection` names."""
    if settings.get(connection):
        return QueueClient.from_connection_string(settings[connection], queue_name, transport=transport)
    signed_in = IdentityConnection.from_settings(identity_settings(settings, connection))
    if signed_in is None:
        raise MissingSetting(f"app setting {connection!r} is not defined, nor {connection}__accountName "
                             f"or {connection}__queueServiceUri (an identity-based connection)")
    return QueueClient(signed_in.urls["queue"], queue_name, credential=shared_token(signed_in.key, signed_in.credential),
                       transport=transport)


class QueuePoller:
    def __init__(self, name: str, function, settings: dict[str, str], connection: str, queue_name: str,
                 config: HostConfig, stop: threading.Event) -> None:
        self.name = name
        self.function = function
        self.config = config
        self.stop = stop
        # One pool big enough for the batch's threads, which settle their messages at once
        # (the SDK's own pool keeps 10 connections and discarded the rest by the hundred).
        transport = shared_transport()
        self.queue = queue_client(settings, connection, queue_name, transport)
        self.poison = queue_client(settings, connection, f"{queue_name}-poison", transport)
        self.pool = ThreadPoolExecutor(max_workers=config.batch_size + config.fetch_below,
                                       thread_name_prefix=f"queue-{name}")
        self.thread = threading.Thread(target=self._loop, name=f"poll-{name}", daemon=True)
        self._room = threading.Condition()
        self._in_flight = 0

    def start(self) -> None:
        for client in (self.queue, self.poison):
            try:
                client.create_queue()
            except ResourceExistsError:
                pass
        self.thread.start()

    def _loop(self) -> None:
        """As the Functions host polls: a batch at a time, the next fetched as soon as no
        more than `newBatchThreshold` of the last are still running (not once all are done:
        a batch's slowest message held back every message behind it), polling less often
        while the queue stays empty."""
        delay = 0.1
        while not self.stop.is_set():
            self._wait_for_room()
            try:
                messages = list(self.queue.receive_messages(
                    messages_per_page=self.config.batch_size, max_messages=self.config.batch_size,
                    visibility_timeout=PROCESSING_HOLD))
            except Exception:
                log.exception("polling %s failed", self.queue.queue_name)
                messages = []
            if messages:
                delay = 0.1
                with self._room:
                    self._in_flight += len(messages)
                for message in messages:
                    self.pool.submit(self._settle, message)
            else:
                delay = min(delay * 2, self.config.max_polling_interval)
                self.stop.wait(delay)
        self.pool.shutdown(wait=True)

    def _wait_for_room(self) -> None:
        with self._room:
            while self._in_flight > self.config.fetch_below and not self.stop.is_set():
                self._room.wait(0.5)

    def _settle(self, message) -> None:
        try:
            self._run(message)
        finally:
            with self._room:
                self._in_flight -= 1
                self._room.notify()

    def _run(self, message) -> None:
        try:
            if message.dequeue_count > self.config.max_dequeue_count:
                # Delivered more often than allowed without being settled (the host stopped
                # mid-run): the Functions host poisons such a message without running it again.
                log.error("message %s of %s was delivered %d times: moved to %s", message.id,
                          self.queue.queue_name, message.dequeue_count, self.poison.queue_name)
                self._poison(message)
                return
            try:
                self.function(self._request(message))
            except Exception:
                self._failed(message)
                return
            self._delete(self.queue, message)
        except Exception:
            # A storage error while settling one message must not end the polling thread; the
            # message becomes visible again when its hold ends.
            log.exception("settling message %s of %s failed", message.id, self.queue.queue_name)

    def _request(self, message) -> QueueMessage:
        return QueueMessage(
            id=message.id, body=self._body(message.content), dequeue_count=message.dequeue_count,
            expiration_time=message.expires_on, insertion_time=message.inserted_on,
            time_next_visible=message.next_visible_on, pop_receipt=message.pop_receipt)

    def _body(self, content: str) -> bytes:
        if self.config.base64_messages:
            try:
                return base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError):
                pass  # the host passes undecodable content through as it is
        return content.encode()

    def _failed(self, message) -> None:
        if message.dequeue_count >= self.config.max_dequeue_count:
            log.error("function %s failed on message %s %d times: moved to %s", self.name, message.id,
                      message.dequeue_count, self.poison.queue_name, exc_info=True)
            self._poison(message)
            return
        log.warning("function %s failed on message %s (attempt %d); retrying", self.name, message.id,
                    message.dequeue_count, exc_info=True)
        try:
            self.queue.update_message(message, visibility_timeout=int(self.config.visibility_timeout))
        except ResourceNotFoundError:
            pass

    def _poison(self, message) -> None:
        try:
            self.poison.send_message(message.content)
        except ResourceNotFoundError:  # deleted since start(): created again, as the Functions host does
            try:
                self.poison.create_queue()
            except ResourceExistsError:
                pass
            self.poison.send_message(message.content)
        self._delete(self.queue, message)

    @staticmethod
    def _delete(queue: QueueClient, message) -> None:
        try:
            queue.delete_message(message)
        except ResourceNotFoundError:
            pass
