"""Task files: defaults filled in only where the file says nothing."""

import pytest

from taskq.task_files import TaskFileError, load_graph, load_task


def test_a_bare_yaml_task_gets_created_deadline_queue_and_metadata(tmp_path):
    path = tmp_path / "build.yml"
    path.write_text("payload:\n  command: [[make]]\nmetadata:\n  owner: me@example.com\n")
    task_id, task = load_task(str(path), "proj/linux")
    assert task_id is None and task["taskQueueId"] == "proj/linux"
    assert task["created"] < task["deadline"] and task["created"].endswith("Z")
    assert task["metadata"]["name"] == "build" and task["metadata"]["owner"] == "me@example.com"
    assert task["metadata"]["source"].startswith("https://")


def test_a_file_may_name_its_task_id_and_keeps_its_own_queue(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"taskId": "abc", "task": {"provisionerId": "p", "workerType": "w", "payload": {}}}')
    task_id, task = load_task(str(path), "proj/linux")
    assert task_id == "abc" and "taskQueueId" not in task


def test_graph_tasks_are_named_after_their_labels(tmp_path):
    path = tmp_path / "g.yml"
    path.write_text("tasks:\n  build:\n    task: {payload: {}}\n  test:\n    requires: [build]\n    task: {}\n")
    graph = load_graph(str(path), "q/w")
    assert [node["task"]["metadata"]["name"] for node in graph["tasks"].values()] == ["build", "test"]


@pytest.mark.parametrize("text", ["- a list", "tasks: {}", "tasks:\n  a: {requires: []}", "{unclosed"])
def test_what_is_not_a_task_or_graph_is_one_clear_error(tmp_path, text):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(TaskFileError):
        load_graph(str(path))


@pytest.mark.parametrize("text, where", [
    ("payload:\n  command: [[echo, hi]\n  maxRunTime: 60\n",
     "line 3, column 3: expected ',' or ']', but got '<scalar>' (while parsing a flow sequence, "
     "which began at line 2, column 12)"),
    ("a: 1\n b: 2\n", "line 2, column 3: mapping values are not allowed here"),
    ('payload:\n  command: "unterminated\n', "found unexpected end of stream (while scanning a quoted scalar, "
                                             "which began at line 2, column 12)"),
])
def test_a_yaml_error_says_where_in_one_line(tmp_path, text, where):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(TaskFileError) as refused:
        load_task(str(path))
    assert str(refused.value).startswith(f"{path}: ") and where in str(refused.value)
    assert "\n" not in str(refused.value)
