"""Scope expression templates in Taskcluster's notation."""

import pytest

from shared.auth.expressions import parameters, render
from shared.api.scopes import CREATE_TASK


def test_placeholders_loops_and_conditions():
    template = {"AllOf": [
        "queue:resolve-task:<taskId>/<runId>",
        {"for": "route", "in": "routes", "each": "queue:route:<route>"},
        {"AnyOf": [{"for": "p", "in": "priorities", "each": "q:<p>"}]},
        {"if": "private", "then": "x:<taskId>", "else": "y"},
        {"if": "private", "then": "z"},
    ]}
    assert parameters(template) == {"taskId", "runId", "routes", "priorities", "private"}
    rendered = render(template, {"taskId": "T", "runId": 0, "routes": ["a", "b"], "priorities": ["high"],
                                 "private": False})
    assert rendered == {"AllOf": ["queue:resolve-task:T/0", "queue:route:a", "queue:route:b",
                                  {"AnyOf": ["q:high"]}, "y"]}


def test_a_missing_or_mistyped_parameter_is_an_error_of_the_declaration():
    with pytest.raises(KeyError):
        render("a:<x>", {})
    with pytest.raises(TypeError):
        render({"AllOf": [{"for": "x", "in": "xs", "each": "<x>"}]}, {"xs": "not a list"})
    with pytest.raises(TypeError):
        render({"if": "flag", "then": "a"}, {"flag": "yes"})
    with pytest.raises(TypeError):
        render("a:<x>", {"x": ["list"]})


def test_create_task_needs_all_of_taskclusters_parts():
    params = {"scopes": ["secrets:get:x"], "routes": ["index.a"], "schedulerId": "s", "projectId": "p",
              "priorities": ["highest", "very-high"], "provisionerId": "prov", "workerType": "wt"}
    assert parameters(CREATE_TASK) == set(params)
    assert render(CREATE_TASK, params) == {"AllOf": [
        "secrets:get:x", "queue:route:index.a", "queue:create-task:project:p", "queue:scheduler-id:s",
        {"AnyOf": ["queue:create-task:highest:prov/wt", "queue:create-task:very-high:prov/wt",
                   "queue:create-task:highest/prov/wt", "queue:create-task:very-high/prov/wt"]}]}
