"""The index's rules: namespaces, the rank rule, and what a completed task's routes index."""

import pytest

from shared.domain.errors import InvalidInput
from shared.domain.index import (MAX_DATA, ancestors, check_data, check_namespace, entries_for_task,
                                 has_index_route, is_namespace, namespace_expiry, replaces, split_namespace)

TASK_ID = "fN1SbArXTPSVFNUvaOlinQ"


@pytest.mark.parametrize("namespace", ["a", "a.b.c", "some-app.0123abc.linux-64.opt", "x_y!~*'()%-.z",
                                       "a" * 255, ".".join("ab" for _ in range(85))])
def test_valid_namespaces(namespace):
    assert is_namespace(namespace) and check_namespace(namespace) == namespace


@pytest.mark.parametrize("namespace, why", [("", "not a namespace"), ("a..b", "not a namespace"),
                                            (".a", "not a namespace"), ("a.", "not a namespace"),
                                            ("a/b", "not a namespace"), ("a b", "not a namespace"),
                                            ("a" * 256, "at most 255"), ("ü", "not a namespace"),
                                            ("a\n", "not a namespace"), (7, "must be a string")])
def test_invalid_namespaces_are_refused_naming_the_field(namespace, why):
    assert not is_namespace(namespace)
    with pytest.raises(InvalidInput) as refused:
        check_namespace(namespace, "indexPath")
    assert refused.value.message.startswith("indexPath: ") and why in refused.value.message


def test_the_root_is_allowed_only_where_said():
    assert check_namespace("", root_allowed=True) == ""
    with pytest.raises(InvalidInput):
        check_namespace("")


def test_a_path_splits_into_its_parent_and_name_and_has_its_ancestors():
    assert split_namespace("a.b.c") == ("a.b", "c") and split_namespace("a") == ("", "a")
    assert ancestors("a.b.c") == ["a.b", "a"] and ancestors("a") == []


def test_a_lower_rank_does_not_replace_a_higher_one_and_an_equal_rank_does():
    assert not replaces(3, 4)
    assert replaces(4, 4) and replaces(5, 4) and replaces(0.5, 0)


def test_a_namespace_lives_until_the_midnight_after_its_latest_entry():
    assert namespace_expiry("2030-05-06T07:08:09.123Z") == "2030-05-07T00:00:00.000Z"
    assert namespace_expiry("2030-12-31T23:59:59.999+00:00") == "2031-01-01T00:00:00.000Z"
    assert namespace_expiry("2030-05-06T23:30:00.000-02:00") == "2030-05-08T00:00:00.000Z"   # UTC day


def test_data_must_be_a_small_object():
    assert check_data({"rev": "abc"}) == {"rev": "abc"}
    with pytest.raises(InvalidInput, match="^data: must be an object"):
        check_data([1])
    with pytest.raises(InvalidInput, match=f"at most {MAX_DATA}"):
        check_data({"big": "x" * MAX_DATA})


def task(**fields) -> dict:
    return {"created": "2030-01-01T00:00:00.000Z", "expires": "2030-06-01T00:00:00.000Z", **fields}


def test_a_task_is_indexed_at_each_index_route_with_taskclusters_defaults():
    routes = ["index.app.rev.build", "notify.email.x", "index.app.latest", "index.app.latest", "index.bad..ns"]
    assert has_index_route(routes) and not has_index_route(["notify.x"]) and not has_index_route(None)
    entries = entries_for_task(TASK_ID, task(routes=routes))
    assert [entry.to_json() for entry in entries] == [
        {"namespace": "app.rev.build", "taskId": TASK_ID, "rank": 0, "data": {}, "expires": "2030-06-01T00:00:00.000Z"},
        {"namespace": "app.latest", "taskId": TASK_ID, "rank": 0, "data": {}, "expires": "2030-06-01T00:00:00.000Z"}]


def test_rank_expires_and_data_come_from_extra_index():
    extra = {"index": {"rank": 4000, "expires": "2030-03-01T00:00:00+01:00", "data": {"rev": "abc"}}}
    [entry] = entries_for_task(TASK_ID, task(routes=["index.a.b"], extra=extra))
    assert (entry.rank, entry.expires, entry.data) == (4000, "2030-02-28T23:00:00.000Z", {"rev": "abc"})


def test_without_expires_an_entry_lives_a_year_after_the_task_was_created():
    [entry] = entries_for_task(TASK_ID, {"created": "2030-01-01T00:00:00.000Z", "routes": ["index.a"]})
    assert entry.expires == "2031-01-01T00:00:00.000Z"


@pytest.mark.parametrize("index", [{"rank": "high"}, {"rank": True}, {"data": "text"}, {"expires": "tomorrow"},
                                   {"data": {"big": "x" * MAX_DATA}}])
def test_an_unusable_extra_index_indexes_nothing(index):
    assert entries_for_task(TASK_ID, task(routes=["index.a"], extra={"index": index})) == []


def test_a_task_without_index_routes_indexes_nothing():
    assert entries_for_task(TASK_ID, task(routes=["tc-treeherder.v2.x"])) == []
    assert entries_for_task(TASK_ID, task()) == []
