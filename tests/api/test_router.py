"""Matching a raw path against endpoints declared as data (shared/api/router.py): a `%2F`
stays inside its parameter, a wildcard takes one or more segments wherever it stands, and
the first endpoint declared that matches is the one."""

from shared.api.router import Endpoint, match

ENDPOINTS = [
    Endpoint("group", "GET", "/workers/<workerPoolId>/<workerGroup>", lambda call: None),
    Endpoint("pool", "GET", "/workers/<workerPoolId>", lambda call: None, wildcard="workerPoolId"),
    Endpoint("counts", "GET", "/task-queues/<taskQueueId>/counts", lambda call: None, wildcard="taskQueueId"),
    Endpoint("queue", "GET", "/task-queues/<taskQueueId>", lambda call: None),
    Endpoint("artifact", "GET", "/task/<taskId>/artifacts/<name>", lambda call: None),
]


def matched(path: str) -> tuple[str, dict] | None:
    found = match(ENDPOINTS, "GET", path)
    return (found[0].name, found[1]) if found else None


def test_an_encoded_slash_stays_inside_its_parameter_and_is_decoded_after():
    assert matched("/workers/proj%2Flinux/wg") == ("group", {"workerPoolId": "proj/linux", "workerGroup": "wg"})
    assert matched("/workers/proj%2Flinux") == ("pool", {"workerPoolId": "proj/linux"})
    assert matched("/task-queues/proj%2Flinux") == ("queue", {"taskQueueId": "proj/linux"})


def test_a_wildcard_takes_its_slashes_as_they_are_wherever_it_stands():
    assert matched("/task-queues/proj/linux/counts") == ("counts", {"taskQueueId": "proj/linux"})
    assert matched("/workers/a/b/c") == ("pool", {"workerPoolId": "a/b/c"})
    assert matched("/task-queues/proj/linux") is None   # getTaskQueue's parameter is one segment


def test_the_first_endpoint_declared_that_matches_answers():
    assert matched("/workers/proj/linux") == ("group", {"workerPoolId": "proj", "workerGroup": "linux"})


def test_a_final_name_takes_the_rest_of_the_path():
    assert matched("/task/abc/artifacts/public/logs/live.log")[1]["name"] == "public/logs/live.log"
    assert matched("/task/abc/artifacts/public%2Flogs%2Flive.log")[1]["name"] == "public/logs/live.log"
