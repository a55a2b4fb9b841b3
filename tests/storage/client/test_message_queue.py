"""The storage queue client, against Azurite (which checks every request's signature): its
calls, the messages' encoding as the Functions trigger reads it, where a connection string
points it and how it authorizes, and what it sends again."""

import base64
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceNotFoundError,
                                   ServiceResponseError)
from azure.storage.queue import (AccountSasPermissions, QueueClient, ResourceTypes, TextBase64DecodePolicy,
                                 TextBase64EncodePolicy, generate_account_sas)

from bench.operation_counts import _label
from shared.storage.client import connections as connections_module
from shared.storage.client import message_queue as message_queue_module
from shared.storage.client.account import AZURITE_CONNECTION, OPERATIONS, StorageAccount
from shared.storage.client.connections import Answer
from shared.storage.client.queue_endpoint import QueueEndpoint
from tests.conftest import eventually, unique_prefix

_ACCOUNT_KEY = AZURITE_CONNECTION.split("AccountKey=")[1].split(";")[0]
HOLD = timedelta(seconds=30)


@pytest.fixture
def queue(azurite):
    return StorageAccount(azurite.connection_string).queue(f"{unique_prefix()}-messages")


def sdk_client(azurite, queue) -> QueueClient:
    """The SDK's client, decoding as the Functions queue trigger does."""
    return QueueClient.from_connection_string(azurite.connection_string, queue.name,
                                              message_decode_policy=TextBase64DecodePolicy())


def test_a_message_is_sent_received_and_deleted(queue):
    sent = queue.send({"taskId": "abc", "n": 1})
    [received] = queue.receive(32, HOLD)
    assert (received.body, received.message_id, received.dequeue_count) == \
        ({"taskId": "abc", "n": 1}, sent.message_id, 1)
    queue.delete(received)
    assert queue.receive(32, HOLD) == []


def test_a_queue_made_again_is_the_same_queue(azurite, queue):
    queue.send({"n": 1})
    again = StorageAccount(azurite.connection_string).queue(queue.name)
    assert [message.body for message in again.receive(32, HOLD)] == [{"n": 1}]


def test_a_delayed_message_is_invisible_until_its_delay(queue):
    queue.send({"n": 1}, timedelta(seconds=2))
    assert queue.receive(32, HOLD) == []
    [received] = eventually(lambda: queue.receive(32, HOLD), timeout=10, interval=0.2, message="the delayed message")
    assert received.body == {"n": 1}


def test_a_delayed_message_can_be_withdrawn_before_it_shows(queue):
    withdrawn = queue.send({"n": 1}, timedelta(seconds=1))
    queue.send({"n": 2}, timedelta(seconds=1))
    queue.delete(withdrawn)
    received = eventually(lambda: queue.receive(32, HOLD), timeout=10, interval=0.2, message="the other message")
    assert [message.body for message in received] == [{"n": 2}]


def test_a_received_message_is_hidden_for_its_hold(queue):
    queue.send({"n": 1})
    assert len(queue.receive(32, timedelta(seconds=1))) == 1
    assert queue.receive(32, HOLD) == []
    [again] = eventually(lambda: queue.receive(32, HOLD), timeout=10, interval=0.2, message="the hold's end")
    assert again.dequeue_count == 2


def test_receive_takes_at_most_the_count_asked_for(queue):
    for n in range(5):
        queue.send({"n": n})
    assert len(queue.receive(3, HOLD)) == 3
    assert len(queue.receive(32, HOLD)) == 2


def test_deleting_a_deleted_message_or_with_a_stale_pop_receipt_is_no_error(queue):
    queue.send({"n": 1})
    [first] = queue.receive(32, timedelta(seconds=1))
    [second] = eventually(lambda: queue.receive(32, HOLD), timeout=10, interval=0.2, message="the hold's end")
    queue.delete(first)                      # received again since: stale, and it stays
    assert second.message_id == first.message_id and second.pop_receipt != first.pop_receipt
    queue.delete(second)
    queue.delete(second)                     # gone already
    assert queue.receive(32, timedelta(seconds=1)) == []


def test_a_sent_message_received_since_is_not_deleted_by_its_sender(queue):
    sent = queue.send({"n": 1}, timedelta(seconds=1))
    [received] = eventually(lambda: queue.receive(32, timedelta(seconds=1)), timeout=10, interval=0.2,
                            message="the delayed message")
    queue.delete(sent)
    [again] = eventually(lambda: queue.receive(32, HOLD), timeout=10, interval=0.2, message="the hold's end")
    assert (again.message_id, again.dequeue_count) == (received.message_id, 2)


def test_a_message_that_is_not_a_json_object_has_no_body(azurite, queue):
    queue.send_raw("not JSON")
    queue.send_raw("[1, 2]")
    # Nor one whose text is not base64 at all: someone else's, not a reason to fail the batch.
    QueueClient.from_connection_string(azurite.connection_string, queue.name).send_message("%% plain text %%")
    received = queue.receive(32, HOLD)
    assert [message.body for message in received] == [None, None, None]


def test_the_text_is_base64_of_the_json_as_the_functions_trigger_reads_it(azurite, queue):
    queue.send({"taskId": "abc", "note": "ünïcode"})
    [raw] = QueueClient.from_connection_string(azurite.connection_string, queue.name).peek_messages()
    [message] = sdk_client(azurite, queue).receive_messages(max_messages=1)
    assert message.content == '{"taskId":"abc","note":"\\u00fcn\\u00efcode"}'   # JSON as json.dumps writes it
    assert base64.b64decode(raw.content).decode() == message.content


def test_a_message_the_sdk_sent_base64_encoded_is_read(azurite, queue):
    QueueClient.from_connection_string(azurite.connection_string, queue.name,
                                       message_encode_policy=TextBase64EncodePolicy()).send_message('{"n": 1}')
    assert [message.body for message in queue.receive(32, HOLD)] == [{"n": 1}]


def test_a_wrong_account_key_is_refused(azurite):
    wrong = base64.b64encode(b"not the key".ljust(64, b"!")).decode()
    with pytest.raises(ClientAuthenticationError) as refused:
        StorageAccount(azurite.connection_string.replace(_ACCOUNT_KEY, wrong)).queue(f"{unique_prefix()}-refused")
    assert refused.value.status_code == 403


def test_a_missing_queue_is_not_found(azurite, queue):
    QueueClient.from_connection_string(azurite.connection_string, queue.name).delete_queue()
    with pytest.raises(ResourceNotFoundError) as missing:
        queue.receive(32, HOLD)
    assert (missing.value.status_code, missing.value.error_code) == (404, "QueueNotFound")


def test_an_azure_connection_string_names_the_account_host():
    endpoint = QueueEndpoint.parse("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + _ACCOUNT_KEY +
                                   ";EndpointSuffix=core.windows.net")
    assert (endpoint.origin, endpoint.base_path, endpoint.account) == \
        ("https://acme.queue.core.windows.net:443", "", "acme")
    headers = endpoint.headers("GET", "/q/messages", {"numofmessages": "1"})
    assert headers["Authorization"].startswith("SharedKey acme:") and headers["x-ms-date"].endswith("GMT")
    assert endpoint.target("/q/messages", {"popreceipt": "a+b/c="}) == "/q/messages?popreceipt=a%2Bb%2Fc%3D"


def test_the_emulator_is_addressed_by_path():
    endpoint = QueueEndpoint.parse(AZURITE_CONNECTION)
    assert (endpoint.origin, endpoint.base_path, endpoint.account) == \
        ("http://127.0.0.1:10001", "/devstoreaccount1", "devstoreaccount1")


def test_a_shared_access_signature_is_sent_instead_of_a_signature(azurite):
    sas = generate_account_sas("devstoreaccount1", _ACCOUNT_KEY,
                               ResourceTypes(service=True, container=True, object=True),
                               AccountSasPermissions(read=True, write=True, add=True, update=True, process=True,
                                                     delete=True, list=True, create=True),
                               datetime.now(timezone.utc) + timedelta(hours=1))
    endpoints = ";".join(part for part in azurite.connection_string.split(";") if "Endpoint=" in part)
    connection = f"{endpoints};SharedAccessSignature=?{sas}"
    endpoint = QueueEndpoint.parse(connection)
    assert "Authorization" not in endpoint.headers("GET", "/q/messages", {})
    assert endpoint.target("/q/messages", {"numofmessages": "1"}) == f"/q/messages?numofmessages=1&{sas}"
    queue = StorageAccount(connection).queue(f"{unique_prefix()}-sas")
    queue.send({"n": 1})
    [received] = queue.receive(32, HOLD)
    queue.delete(received)
    assert received.body == {"n": 1} and queue.receive(32, HOLD) == []


def test_each_call_is_counted_once_and_labelled_by_queue(queue):
    seen = []
    queue._counter = type("Recorder", (), {"on_request": lambda self, request: seen.append(request)})()
    queue.delete(queue.send({"n": 1}))
    queue.receive(32, HOLD)
    labels = [_label(request.method, request.url, "") for request in seen]
    assert labels == [f"POST queue:{queue.name}/messages", f"DELETE queue:{queue.name}/message",
                      f"GET queue:{queue.name}/messages"]


class Scripted:
    """Answers a queue's requests from a script (Azurite is never busy on demand)."""

    def __init__(self, *answers):
        self.answers, self.sent = list(answers), []

    def send(self, method, target, body, headers):
        self.sent.append(method)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


BUSY = Answer(503, "Server Busy", {"x-ms-error-code": "ServerBusy"}, b"")
SENT = Answer(201, "Created", {}, b'<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage>'
                                  b'<MessageId>m1</MessageId><PopReceipt>p1</PopReceipt></QueueMessage>'
                                  b'</QueueMessagesList>')


@pytest.fixture
def scripted_queue(queue, monkeypatch):
    monkeypatch.setattr(connections_module.time, "sleep", lambda seconds: None)
    return queue


def test_a_send_storage_was_busy_for_or_whose_answer_was_lost_is_sent_again_and_counted_once(scripted_queue,
                                                                                             monkeypatch):
    script = Scripted(BUSY, ServiceResponseError("reset"), SENT)
    monkeypatch.setattr(scripted_queue, "_connections", script)
    before = OPERATIONS.value
    assert scripted_queue.send({"n": 1}) == message_queue_module.SentMessage("m1", "p1")
    assert script.sent == ["POST"] * 3 and OPERATIONS.value == before + 1


def test_a_queue_busy_every_time_is_an_error_after_backing_off_with_jitter(scripted_queue, monkeypatch):
    waits = []
    monkeypatch.setattr(connections_module.time, "sleep", waits.append)
    script = Scripted(*[BUSY] * 100)
    monkeypatch.setattr(scripted_queue, "_connections", script)
    with pytest.raises(HttpResponseError) as refused:
        scripted_queue.receive(32, HOLD)
    assert (refused.value.status_code, refused.value.error_code) == (503, "ServerBusy")
    assert sum(waits[:-1]) < connections_module.BUSY_SECONDS <= sum(waits)   # backed off for as long as allowed
    assert len(script.sent) == len(waits) + 1 and max(waits) <= connections_module.BACKOFF_CAP * 1.5
    capped = waits[4:]
    assert len(set(capped)) == len(capped)   # the waits are jittered: no two alike


def test_messages_sent_beyond_a_queues_target_all_arrive(azurite, throttling):
    """Through Azure's throttling (`devhost.throttling`) at 10 messages/s a queue: 20 senders
    at once are refused, back off with jitter, and every message lands; one whose send
    timed out after it landed is sent again (a hint may come twice)."""
    proxy = throttling(200)
    queue = StorageAccount(proxy.connection_string(azurite.connection_string)).queue(f"{unique_prefix()}-busy")
    proxy.throttle.arm("timeout")
    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(lambda n: queue.send({"n": n}), range(20)))
    received: set[int] = set()

    def all_received() -> bool:
        for message in queue.receive(32, HOLD):
            received.add(message.body["n"])
            queue.delete(message)
        return received == set(range(20))
    eventually(all_received, timeout=30, interval=0.2, message="every message received")
    counts = proxy.throttle.counts()["partitions"][f"queue {queue.name}"]
    assert counts["refused"] > 0 and counts["timed_out"] == 1
