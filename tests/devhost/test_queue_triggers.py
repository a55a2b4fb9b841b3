"""Queue triggers against real Azurite storage queues: delivery, retries and poison queues."""

from __future__ import annotations

import base64
import json
import threading
import time

import azure.functions as func
import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.storage.queue import QueueClient

from devhost.host_config import HostConfig
from devhost.queue_triggers import QueuePoller

from tests.devhost.conftest import eventually, unique_queue_name

# Retries at once (visibilityTimeout 0) and short idle polls keep each test to a few seconds.
CONFIG = HostConfig(batch_size=4, max_dequeue_count=3, visibility_timeout=0, max_polling_interval=0.5)


@pytest.fixture
def start_poller(azurite):
    """`start_poller(function, config=CONFIG, name=None)` polls a queue (a fresh one unless
    named); returns (poller, queue, poison)."""
    stops, clients = [], []

    def start(function, config: HostConfig = CONFIG, name: str | None = None):
        name = name or unique_queue_name()
        stop = threading.Event()
        poller = QueuePoller("test-fn", function, {"AzureWebJobsStorage": azurite.connection_string},
                             "AzureWebJobsStorage", name, config, stop)
        poller.start()
        stops.append((stop, poller))
        queue = QueueClient.from_connection_string(azurite.connection_string, name)
        poison = QueueClient.from_connection_string(azurite.connection_string, f"{name}-poison")
        clients.extend((queue, poison))
        return poller, queue, poison

    yield start
    for stop, poller in stops:
        stop.set()
        poller.thread.join(timeout=10)
        assert not poller.thread.is_alive(), "the poller did not stop"
    for client in clients:
        try:
            client.delete_queue()
        except ResourceNotFoundError:
            pass


def send_json(queue: QueueClient, document) -> str:
    """Send as Azure's SDKs do for a Functions app with the default base64 message encoding."""
    return queue.send_message(base64.b64encode(json.dumps(document).encode()).decode()).id


def remaining(queue: QueueClient) -> int:
    return queue.get_queue_properties().approximate_message_count


def test_a_message_reaches_the_function_as_a_queue_message_and_is_deleted(start_poller):
    received = []
    _, queue, poison = start_poller(received.append)

    message_id = send_json(queue, {"taskId": "abc", "runId": 0})

    message = eventually(lambda: received and received[0], message="delivery")
    assert isinstance(message, func.QueueMessage)
    assert message.id == message_id
    assert message.get_json() == {"taskId": "abc", "runId": 0}  # base64 decoded for the function
    assert message.dequeue_count == 1
    assert message.pop_receipt and message.insertion_time and message.expiration_time
    eventually(lambda: remaining(queue) == 0, message="the message deleted after success")
    assert len(received) == 1 and remaining(poison) == 0


def test_the_next_batch_is_fetched_once_no_more_than_new_batch_threshold_messages_are_running(start_poller):
    """As the Functions host does: slow messages of a batch do not hold back the messages
    behind them once few enough are left running; at most batchSize + newBatchThreshold run."""
    gates = {number: threading.Event() for number in range(3)}   # three slow messages
    lock, running, done, most = threading.Lock(), set(), [], [0]

    def handle(message: func.QueueMessage) -> None:
        number = message.get_json()["number"]
        with lock:
            running.add(number)
            most[0] = max(most[0], len(running))
        if number in gates:
            gates[number].wait(10)
        with lock:
            running.discard(number)
            done.append(number)

    config = HostConfig(batch_size=4, new_batch_threshold=2, max_polling_interval=0.2)
    _, queue, _ = start_poller(handle, config)
    for number in range(3):
        send_json(queue, {"number": number})
    eventually(lambda: running == {0, 1, 2}, message="the slow messages running")
    for number in range(3, 9):
        send_json(queue, {"number": number})
    time.sleep(1)   # several polls' time
    assert not done and running == {0, 1, 2}   # three running, more than 2: nothing fetched
    gates[0].set()                             # two left running: the next batches come
    eventually(lambda: set(range(3, 9)) <= set(done), message="the messages behind the slow ones handled")
    assert running == {1, 2}
    gates[1].set()
    gates[2].set()
    eventually(lambda: len(done) == 9 and remaining(queue) == 0, message="every message settled")
    assert most[0] <= config.batch_size + config.fetch_below


def test_text_that_is_not_base64_is_passed_through(start_poller):
    received = []
    _, queue, _ = start_poller(received.append)
    queue.send_message("plain text!")
    message = eventually(lambda: received and received[0], message="delivery")
    assert message.get_body() == b"plain text!"


def test_a_failure_is_retried_and_a_later_success_deletes_the_message(start_poller):
    attempts = []

    def flaky(message: func.QueueMessage) -> None:
        attempts.append(message.dequeue_count)
        if len(attempts) < 2:
            raise RuntimeError("first attempt fails")

    _, queue, poison = start_poller(flaky)
    send_json(queue, {"n": 1})

    eventually(lambda: len(attempts) == 2, message="the retry")
    eventually(lambda: remaining(queue) == 0, message="the message deleted after the retry succeeded")
    assert attempts == [1, 2]
    assert remaining(poison) == 0


def test_a_message_that_always_fails_lands_in_the_poison_queue_after_max_dequeue_count(start_poller):
    attempts = []

    def always_fails(message: func.QueueMessage) -> None:
        attempts.append(message.dequeue_count)
        raise RuntimeError("this message can never be handled")

    _, queue, poison = start_poller(always_fails)
    content = base64.b64encode(b'{"bad": true}').decode()
    queue.send_message(content)

    poisoned = eventually(lambda: list(poison.peek_messages(max_messages=5)), message="the poison message")
    assert [m.content for m in poisoned] == [content]  # the original content, as sent
    assert attempts == [1, 2, 3]  # exactly maxDequeueCount attempts
    # the copy goes to the poison queue first, then the original is deleted: wait for the second write
    eventually(lambda: remaining(queue) == 0, message="the original deleted after it was poisoned")


def test_a_deleted_poison_queue_is_created_again_and_polling_goes_on(start_poller):
    received = []

    def handle(message: func.QueueMessage) -> None:
        if message.get_body() == b"bad":
            raise RuntimeError("bad message")
        received.append(message.get_body())

    poller, queue, poison = start_poller(handle, HostConfig(max_dequeue_count=1, max_polling_interval=0.5))
    poison.delete_queue()  # e.g. an operator cleared it while the host runs
    queue.send_message(base64.b64encode(b"bad").decode())

    eventually(lambda: _exists(poison) and remaining(poison) == 1, message="the poison queue made again")
    send_json(queue, "good")
    eventually(lambda: received == [b'"good"'], message="the next message, on the same poller")
    assert poller.thread.is_alive()


def _exists(queue: QueueClient) -> bool:
    try:
        queue.get_queue_properties()
    except ResourceNotFoundError:
        return False
    return True


def test_a_message_delivered_too_often_is_poisoned_without_running(azurite, start_poller):
    # Three deliveries that never settled (as when a host dies mid-run), before our host starts.
    name = unique_queue_name()
    queue = QueueClient.from_connection_string(azurite.connection_string, name)
    queue.create_queue()
    queue.send_message("crashes the host")
    for _ in range(CONFIG.max_dequeue_count):
        [message] = queue.receive_messages(max_messages=1, visibility_timeout=30)
        queue.update_message(message, visibility_timeout=0)

    calls = []
    _, queue, poison = start_poller(calls.append, name=name)

    poisoned = eventually(lambda: list(poison.peek_messages()), message="the poison message")
    assert [m.content for m in poisoned] == ["crashes the host"]
    assert calls == []
    eventually(lambda: remaining(queue) == 0, message="the original deleted after it was poisoned")
