"""A hook's task rendered with JSON-e in Taskcluster's context, and its defaults."""

from datetime import datetime, timezone

import pytest

from shared.domain.hooks import fire_context
from shared.services.hooks.task_template import TemplateFailed, render_task

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
TASK_ID = "fN1SbArXTPSVFNUvaOlinQ"


def test_the_template_sees_the_fire_and_its_times_come_from_now():
    template = {"provisionerId": "proj", "workerType": "ci",
                "payload": {"command": ["build", {"$eval": "payload.branch"}], "by": "${firedBy}/${clientId}",
                            "self": {"$eval": "taskId"}},
                "deadline": {"$fromNow": "2 hours"}, "metadata": {"name": "nightly"}}
    task = render_task(template, fire_context("triggerHook", TASK_ID, NOW, {"branch": "main"}, client_id="alice"))
    assert task["payload"] == {"command": ["build", "main"], "by": "triggerHook/alice", "self": TASK_ID}
    assert (task["created"], task["deadline"], task["expires"]) == (
        "2026-03-01T12:00:00.000Z", "2026-03-01T14:00:00.000Z", "2026-03-31T12:00:00.000Z")
    assert task["taskGroupId"] == TASK_ID           # its own group, as a decision task's


def test_a_template_setting_its_own_group_and_times_keeps_them():
    template = {"taskGroupId": "Xv2nEkA9RvyXDCNKr6p3Wg", "created": {"$fromNow": "0 seconds"},
                "expires": {"$fromNow": "1 year"}}
    task = render_task(template, fire_context("schedule", TASK_ID, NOW))
    assert task["taskGroupId"] == "Xv2nEkA9RvyXDCNKr6p3Wg" and task["expires"] == "2027-03-01T12:00:00.000Z"
    assert task["deadline"] == "2026-03-02T12:00:00.000Z"


def test_a_template_rendering_to_null_declines_the_fire():
    template = {"$if": "payload.run", "then": {"payload": {}}}
    assert render_task(template, fire_context("pulseMessage", TASK_ID, NOW, {"run": False})) is None
    assert render_task(template, fire_context("pulseMessage", TASK_ID, NOW, {"run": True}))["payload"] == {}


@pytest.mark.parametrize("template, why", [
    ({"payload": {"$eval": "payload.x"}}, "unknown context value payload"),   # a schedule has no payload
    ({"$eval": "[1, 2]"}, "not an object"),
    ({"a": {"$eval": "1 + 'a'"}}, "expects numbers"),
])
def test_a_template_that_fails_says_why(template, why):
    with pytest.raises(TemplateFailed, match=why):
        render_task(template, fire_context("schedule", TASK_ID, NOW))
