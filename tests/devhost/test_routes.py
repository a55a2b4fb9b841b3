"""Route templates as the Functions host matches them against raw (percent-encoded) paths."""

from devhost.routes import RouteTemplate


def match(template: str, path: str):
    return RouteTemplate.parse(template).match(path)


def test_parameters_take_one_segment_each():
    assert match("api/items/{id}", "/api/items/42") == {"id": "42"}
    assert match("api/items/{id}", "/api/items/42/") == {"id": "42"}  # a trailing slash is ignored
    assert match("api/items/{id}", "/api/items/42/parts") is None
    assert match("api/items/{id}", "/api/items") is None
    assert match("api/items/{id}", "/api/other/42") is None


def test_literals_ignore_case():
    assert match("api/Queue/v1/ping", "/API/queue/V1/PING") == {}


def test_encoded_slash_stays_inside_its_parameter_and_stays_encoded():
    # The Taskcluster client sends taskQueueId `proj/linux` as `proj%2Flinux`: one segment.
    template = "api/queue/v1/claim-work/{taskQueueId}"
    assert match(template, "/api/queue/v1/claim-work/proj%2Flinux") == {"taskQueueId": "proj%2Flinux"}
    # Lower-case escapes are the same character; other escapes are decoded.
    assert match(template, "/api/queue/v1/claim-work/proj%2flinux") == {"taskQueueId": "proj%2Flinux"}
    assert match(template, "/api/queue/v1/claim-work/my%20queue") == {"taskQueueId": "my queue"}
    # A real slash is a segment boundary, so it does not match a single parameter.
    assert match(template, "/api/queue/v1/claim-work/proj/linux") is None


def test_catch_all_takes_the_rest_of_the_path_and_may_be_empty():
    template = "api/queue/v1/{*path}"
    assert match(template, "/api/queue/v1/task/abc/artifacts/public%2Flogs%2Flive.log") == {
        "path": "task/abc/artifacts/public%2Flogs%2Flive.log"}
    assert match(template, "/api/queue/v1/ping") == {"path": "ping"}
    assert match(template, "/api/queue/v1") == {"path": ""}
    assert match(template, "/api/queue") is None


def test_optional_parameter_and_constraints():
    assert match("items/{id?}", "/items") == {}
    assert match("items/{id?}", "/items/7") == {"id": "7"}
    assert match("items/{id:int}", "/items/-7") == {"id": "-7"}
    assert match("items/{id:int}", "/items/seven") is None
    assert match("items/{name:alpha}", "/items/seven") == {"name": "seven"}
    assert match("items/{name:alpha}", "/items/7") is None


def test_literal_routes_come_before_parameters_and_catch_alls_last():
    templates = [RouteTemplate.parse(t) for t in ("items/{*rest}", "items/{id}", "items/new")]
    ordered = [t.template for t in sorted(templates, key=lambda t: t.precedence)]
    assert ordered == ["items/new", "items/{id}", "items/{*rest}"]
    # ...and each of them does match `items/new`, so the order is what decides.
    assert all(t.match("/items/new") is not None for t in templates)
