"""Scope patterns and AllOf/AnyOf expressions, with Taskcluster's meaning."""

from shared.auth.scopes import ScopeSet, all_of, normalize, valid_scope


def test_a_star_at_the_end_matches_any_suffix_and_nothing_else_does():
    scopes = ScopeSet(["queue:get-task:*", "queue:status:abc", "a*b"])
    assert scopes.has("queue:get-task:") and scopes.has("queue:get-task:x/y*")
    assert scopes.has("queue:status:abc") and not scopes.has("queue:status:abcd")
    assert scopes.has("a*b") and not scopes.has("axb")       # a star elsewhere is just a character
    assert not scopes.has("queue:get-task")                   # the prefix stops short of the star
    assert ScopeSet(["*"]).has("anything at all") and ScopeSet(["*"]).has("*")
    assert not ScopeSet(["queue:*"]).has("*")                 # only `*` satisfies the literal "*"


def test_all_of_and_any_of_nest_and_empty_lists_mean_true_and_false():
    scopes = ScopeSet(["a", "b:*"])
    assert scopes.satisfies({"AllOf": []}) and not scopes.satisfies({"AnyOf": []})
    assert scopes.satisfies({"AllOf": ["a", {"AnyOf": ["c", "b:1"]}]})
    assert not scopes.satisfies({"AllOf": ["a", {"AnyOf": ["c", "d"]}]})
    assert ScopeSet([]).satisfies({"AllOf": []})


def test_missing_names_what_is_left_simplified():
    scopes = ScopeSet(["a", "b:*"])
    assert scopes.missing({"AllOf": ["a", "b:1"]}) is None
    assert scopes.missing({"AllOf": ["a", "c"]}) == "c"
    assert scopes.missing({"AllOf": ["c", {"AnyOf": ["d", "e"]}]}) == {"AllOf": ["c", {"AnyOf": ["d", "e"]}]}
    assert scopes.missing({"AnyOf": ["c", "b:2"]}) is None
    assert scopes.missing({"AnyOf": ["c"]}) == "c"


def test_normalize_keeps_the_same_authority_in_fewer_scopes():
    assert normalize(["q:1", "q:*", "r", "r", "q:"]) == ("q:*", "r")
    assert normalize(["a*", "*"]) == ("*",)
    assert normalize(["a**", "a*"]) == ("a*",)


def test_valid_scopes_are_printable_ascii():
    assert valid_scope("queue:get-task:*") and valid_scope("") and valid_scope("with space ~")
    assert not valid_scope("tab\there") and not valid_scope("é") and not valid_scope(5)


def test_all_of_drops_repeats():
    assert all_of(["a", "b", "a", {"AnyOf": ["x"]}, {"AnyOf": ["x"]}]) == {"AllOf": ["a", "b", {"AnyOf": ["x"]}]}
