"""The hooks service through the official `taskcluster.Hooks` client and a real host: hooks
and their groups, triggers by call and by token, the triggerSchema, the hook's role as the
only authority of its tasks, last fires, status, and the hooks' events."""

from __future__ import annotations

import pytest
import taskcluster

from shared.domain.ids import new_slugid
from shared.validation import check_response
from tests.api.conftest import refusal
from tests.api.hooks_fixtures import GROUP, hook_definition, hooks_client, new_queue
from tests.api.hooks_fixtures import hooks_server  # noqa: F401 (a fixture the tests take by name)
from tests.events.amqp_consumer import Consumer
from tests.reference import schema_errors

SCHEMAS = "hooks-schemas-json"


@pytest.fixture
def hooks(hooks_server) -> taskcluster.Hooks:
    return hooks_client(hooks_server)


@pytest.fixture
def queue(hooks_server) -> taskcluster.Queue:
    return hooks_server.client()


def conforms(schema: str, body: dict) -> dict:
    assert check_response(f"hooks/{schema}", body) == [] and schema_errors(schema, body, SCHEMAS) == []
    return body


def unique_id(prefix: str = "hook") -> str:
    return f"{prefix}-{new_slugid()[:8].lower().replace('_', 'x')}"


def test_a_hook_is_created_read_listed_updated_and_removed(hooks):
    hook_id, task_queue_id = f"nightly/{unique_id()}", new_queue()
    definition = hook_definition(task_queue_id, schedule=["0 0 3 * * *"])
    created = conforms("hook-definition", hooks.createHook(GROUP, hook_id, definition))
    assert (created["hookGroupId"], created["hookId"]) == (GROUP, hook_id)
    assert created["triggerSchema"] == {"type": "object", "additionalProperties": False}   # Taskcluster's default
    assert created["metadata"]["name"] == "a test hook" and created["schedule"] == ["0 0 3 * * *"]
    assert hooks.hook(GROUP, hook_id) == created
    assert hooks.createHook(GROUP, hook_id, definition) == created         # the same again: no change
    status, body = refusal(hooks.createHook, GROUP, hook_id, {**definition, "schedule": []})
    assert status == 409 and body["code"] == "RequestConflict"

    assert GROUP in conforms("list-hook-groups-response", hooks.listHookGroups())["groups"]
    listed = conforms("list-hooks-response", hooks.listHooks(GROUP))["hooks"]
    assert created in listed
    hook_status = conforms("hook-status", hooks.getHookStatus(GROUP, hook_id))
    assert hook_status["lastFire"] == {"result": "no-fire"} and hook_status["nextScheduledDate"].endswith("T03:00:00.000Z")

    updated = conforms("hook-definition", hooks.updateHook(GROUP, hook_id, {**definition, "schedule": []}))
    assert updated["schedule"] == [] and "nextScheduledDate" not in hooks.getHookStatus(GROUP, hook_id)
    assert hooks.removeHook(GROUP, hook_id) == {}
    assert hooks.removeHook(GROUP, hook_id) == {}                            # gone already: no error
    for call in (hooks.hook, hooks.getHookStatus, hooks.getTriggerToken):
        status, body = refusal(call, GROUP, hook_id)
        assert status == 404 and body["message"] == "No such hook"
    status, _ = refusal(hooks.updateHook, GROUP, hook_id, definition)
    assert status == 404
    assert hooks.createHook(GROUP, hook_id, definition)["hookId"] == hook_id    # made again after removal


def test_a_group_is_listed_while_it_has_hooks(hooks):
    group, hook_id = unique_id("group"), unique_id()
    status, body = refusal(hooks.listHooks, group)
    assert status == 404 and body["message"] == "No such group"
    hooks.createHook(group, hook_id, hook_definition(new_queue()))
    assert group in hooks.listHookGroups()["groups"]
    hooks.removeHook(group, hook_id)
    assert group not in hooks.listHookGroups()["groups"]


def test_bad_definitions_are_refused_naming_what_is_wrong(hooks):
    hook_id, definition = unique_id(), hook_definition(new_queue())
    cases = [({**definition, "schedule": ["0 61 * * * *"]}, "schedule[0]", "InputError"),
             ({**definition, "triggerSchema": {"type": "no-such-type"}}, "triggerSchema", "InputError"),
             ({**definition, "hookId": "another"}, "Hook Ids do not match", "InputError"),
             ({**definition, "metadata": {"name": "x"}}, "metadata", "InputValidationError")]
    for body, named, code in cases:
        status, refused = refusal(hooks.createHook, GROUP, hook_id, body)
        assert (status, refused["code"]) == (400, code) and named in refused["message"], refused
    status, refused = refusal(hooks.hook, GROUP, "has space")
    assert status == 400 and "hookId" in refused["message"]


def test_trigger_hook_renders_the_task_with_the_callers_payload(hooks, queue):
    hook_id, task_queue_id = unique_id(), new_queue()
    hooks.createHook(GROUP, hook_id, hook_definition(task_queue_id, triggerSchema={
        "type": "object", "properties": {"branch": {"type": "string"}}, "required": ["branch"],
        "additionalProperties": False}, task={**hook_definition(task_queue_id)["task"], "payload": {
            "branch": {"$eval": "payload.branch"}, "firedBy": {"$eval": "firedBy"}, "who": {"$eval": "clientId"}}}))
    answer = conforms("trigger-hook-response", hooks.triggerHook(GROUP, hook_id, {"branch": "main"}))
    task_id = answer["taskId"]
    assert answer["status"] == {"taskId": task_id}
    task = queue.task(task_id)
    assert task["payload"] == {"branch": "main", "firedBy": "triggerHook", "who": "static/tests-root"}
    assert task["taskGroupId"] == task_id and task["taskQueueId"] == task_queue_id

    chosen = new_slugid()
    status, body = refusal(hooks.triggerHook, GROUP, hook_id, {"branch": "main", "taskId": chosen})
    assert status == 400 and "payload" in body["message"]          # taskId is not in this triggerSchema
    for payload, field in (({}, "branch"), ({"branch": 7}, "payload.branch")):
        status, body = refusal(hooks.triggerHook, GROUP, hook_id, payload)
        assert (status, body["code"]) == (400, "InputError") and field in body["message"], body
    fires = conforms("list-lastFires-response", hooks.listLastFires(GROUP, hook_id))["lastFires"]
    assert [(fire["firedBy"], fire["taskId"], fire["result"]) for fire in fires] == [("triggerHook", task_id,
                                                                                      "success")]
    assert fires[0]["taskState"] == "pending"


def test_a_trigger_may_choose_the_task_id(hooks, queue):
    hook_id, task_queue_id = unique_id(), new_queue()
    hooks.createHook(GROUP, hook_id, hook_definition(task_queue_id, triggerSchema={"type": "object"}))
    chosen = new_slugid()
    assert hooks.triggerHook(GROUP, hook_id, {"taskId": chosen})["taskId"] == chosen
    assert queue.task(chosen)["payload"]["taskId"] == chosen
    status, body = refusal(hooks.triggerHook, GROUP, hook_id, {"taskId": "not-a-slugid"})
    assert status == 400 and "taskId" in body["message"]


def test_trigger_with_token_and_the_token_reset(hooks_server, hooks, queue):
    hook_id = unique_id()
    hooks.createHook(GROUP, hook_id, hook_definition(new_queue()))
    token = conforms("trigger-token-response", hooks.getTriggerToken(GROUP, hook_id))["token"]
    assert hooks.getTriggerToken(GROUP, hook_id)["token"] == token
    anonymous = hooks_client(hooks_server, None)
    task_id = anonymous.triggerHookWithToken(GROUP, hook_id, token, {})["taskId"]
    assert queue.task(task_id)["payload"]["firedBy"] == "triggerHookWithToken"

    fresh = hooks.resetTriggerToken(GROUP, hook_id)["token"]
    assert fresh != token and hooks.getTriggerToken(GROUP, hook_id)["token"] == fresh
    status, body = refusal(anonymous.triggerHookWithToken, GROUP, hook_id, token, {})
    assert (status, body["code"]) == (401, "AuthenticationFailed") and token not in body["message"]
    assert anonymous.triggerHookWithToken(GROUP, hook_id, fresh, {})["taskId"]
    status, _ = refusal(anonymous.triggerHookWithToken, GROUP, unique_id(), fresh, {})
    assert status == 404
    fires = hooks.listLastFires(GROUP, hook_id)["lastFires"]
    assert [fire["firedBy"] for fire in fires] == ["triggerHookWithToken"] * 2
    log = hooks_server.log_path.read_text()
    assert f"{hook_id}/trigger/(token)" in log and token not in log and fresh not in log   # a secret: never logged


def test_the_task_can_use_only_what_the_hooks_role_grants(hooks_server, hooks, queue):
    hook_id, task_queue_id = unique_id(), new_queue()
    allowed = hook_definition(task_queue_id, task={**hook_definition(task_queue_id)["task"],
                                                   "routes": ["index.hooks.latest"]})
    hooks.createHook(GROUP, hook_id, allowed)
    # A client that may only trigger: the task is created with the role, not with its scopes.
    task_id = hooks_client(hooks_server, "trigger-only").triggerHook(GROUP, hook_id, {})["taskId"]
    assert queue.task(task_id)["routes"] == ["index.hooks.latest"]

    # Beyond the role, the root client triggering it gets nothing more: its scopes are not used.
    for extra in ({"scopes": ["secrets:get:production"]}, {"priority": "highest"}, {"routes": ["index.elsewhere"]}):
        greedy = unique_id()
        hooks.createHook(GROUP, greedy, hook_definition(task_queue_id, task={**allowed["task"], **extra}))
        status, body = refusal(hooks.triggerHook, GROUP, greedy, {})
        assert (status, body["code"]) == (403, "InsufficientScopes"), body
        assert body["message"].startswith(f"The role `hook-id:{GROUP}/{greedy}` does not have sufficient scopes")
        [fire] = hooks.listLastFires(GROUP, greedy)["lastFires"]
        assert fire["result"] == "error" and "InsufficientScopes" in fire["error"] and fire["taskState"] == "unknown"
        status = hooks.getHookStatus(GROUP, greedy)["lastFire"]
        assert status["result"] == "error" and status["error"]["code"] == "InsufficientScopes"


def test_writing_a_hook_takes_its_role(hooks_server):
    definition, hook_id = hook_definition(new_queue()), unique_id()
    status, body = refusal(hooks_client(hooks_server, "editor").createHook, GROUP, hook_id, definition)
    assert status == 403 and f"assume:hook-id:{GROUP}/{hook_id}" in body["message"]
    assert hooks_client(hooks_server, "editor-with-role").createHook(GROUP, hook_id, definition)["hookId"] == hook_id
    status, _ = refusal(hooks_client(hooks_server, "trigger-only").getTriggerToken, GROUP, hook_id)
    assert status == 403


def test_a_template_that_fails_or_declines(hooks):
    hook_id, declining = unique_id(), unique_id()
    hooks.createHook(GROUP, hook_id, hook_definition(new_queue(), task={"$eval": "nothing.here"}))
    status, body = refusal(hooks.triggerHook, GROUP, hook_id, {})
    assert status == 400 and body["message"].startswith("While firing hook:")
    assert hooks.listLastFires(GROUP, hook_id)["lastFires"][0]["result"] == "error"
    hooks.createHook(GROUP, declining, hook_definition(new_queue(), task={"$if": "firedBy == 'schedule'",
                                                                          "then": {"a": 1}}))
    assert hooks.triggerHook(GROUP, declining, {}) == {}
    status, body = refusal(hooks.listLastFires, GROUP, declining)      # no task, no fire (as Taskcluster)
    assert status == 404 and body["message"] == "No such hook or never fired"


def test_a_queue_refusal_is_reported_as_taskcluster_does(hooks):
    hook_id = unique_id()
    hooks.createHook(GROUP, hook_id, hook_definition(new_queue(), task={"taskQueueId": "nope"}))
    status, body = refusal(hooks.triggerHook, GROUP, hook_id, {})
    assert status == 400 and body["message"].startswith("While calling createTask: InputValidationError")


def test_last_fires_are_paged_newest_first(hooks):
    hook_id = unique_id()
    hooks.createHook(GROUP, hook_id, hook_definition(new_queue()))
    task_ids = [hooks.triggerHook(GROUP, hook_id, {})["taskId"] for _ in range(5)]
    pages, token = [], None
    while True:
        answer = hooks.listLastFires(GROUP, hook_id, query={"limit": 2, **({"continuationToken": token}
                                                                             if token else {})})
        pages.append([fire["taskId"] for fire in answer["lastFires"]])
        token = answer.get("continuationToken")
        if not token:
            break
    assert [task_id for page in pages for task_id in page] == task_ids[::-1] and len(pages) == 3


def test_the_hooks_exchanges(hooks_server, hooks, broker):
    events = taskcluster.HooksEvents({"rootUrl": hooks_server.root_url})
    consumer = Consumer(broker.url, [events.hookCreated(), events.hookUpdated(), events.hookDeleted()])
    try:
        hook_id, definition = unique_id(), hook_definition(new_queue())
        hooks.createHook(GROUP, hook_id, definition)
        hooks.updateHook(GROUP, hook_id, {**definition, "schedule": ["@daily"]})
        hooks.removeHook(GROUP, hook_id)
        mine = [message for message in consumer.wait_for(3, what="hook events")
                if message.body.get("hookId") == hook_id]
        assert [message.name for message in mine] == ["hook-created", "hook-updated", "hook-deleted"]
        assert all(message.body == {"hookGroupId": GROUP, "hookId": hook_id} for message in mine)
        assert all(schema_errors("pulse-hook-changed-message", message.body, SCHEMAS) == [] for message in mine)
        assert all(message.routing_key == "_" and message.persistent for message in mine)
    finally:
        consumer.close()
