"""Role expansion through `assume:`, as Taskcluster's auth service does it."""

import random

import pytest

from shared.auth.roles import MAX_SCOPES, RoleExpansionTooLarge, Roles, _match


def test_roles_expand_recursively():
    roles = Roles({"group:admins": ["admin-scope-1", "assume:group:devs"], "group:devs": ["dev-scope"]})
    assert roles.expand_all(["assume:group:admins", "my-scope"]) == (
        "admin-scope-1", "assume:group:admins", "assume:group:devs", "dev-scope", "my-scope")
    assert roles.expand_all(["my-scope"]) == ("my-scope",)


def test_a_starred_role_applies_to_every_role_id_it_prefixes_and_passes_on_the_suffix():
    roles = Roles({"hook-id:taskcluster/*": ["queue:create-task:hooks"],
                   "project-admin:*": ["auth:create-role:project-<..>/*", "secrets:get:project/<..>/*"]})
    assert "queue:create-task:hooks" in roles.expand_all(["assume:hook-id:taskcluster/nightly"])
    assert set(roles.expand_all(["assume:project-admin:zap"])) >= {"auth:create-role:project-zap/*",
                                                                   "secrets:get:project/zap/*"}
    # A starred parameter covers whatever followed <..>.
    assert set(roles.expand_all(["assume:project-admin:ops*"])) >= {"auth:create-role:project-ops*",
                                                                    "secrets:get:project/ops*"}


def test_a_starred_assume_scope_assumes_every_role_it_prefixes():
    roles = Roles({"repo:github.com/org/app": ["secrets:get:app"], "other": ["secrets:get:other"]})
    assert "secrets:get:app" in roles.expand_all(["assume:repo:github.com/*"])
    assert "secrets:get:other" not in roles.expand_all(["assume:repo:github.com/*"])
    assert {"secrets:get:app", "secrets:get:other"} <= set(Roles({**{"x": ["y"]}, "other": ["secrets:get:other"],
                                                                  "a": ["secrets:get:app"]}).expand_all(["assume*"]))
    assert roles.expand_all(["*"]) == ("*",)   # `*` assumes everything, and holds everything anyway


def test_cycles_end_and_endless_growth_is_refused():
    assert Roles({"a": ["assume:b"], "b": ["assume:a", "s"]}).expand_all(["assume:a"]) == (
        "assume:a", "assume:b", "s")
    with pytest.raises(RoleExpansionTooLarge):
        Roles({"grow*": ["assume:grow<..>x"]}).expand_all(["assume:grow"])
    assert MAX_SCOPES >= 1000


def test_the_roles_a_scope_assumes_are_found_as_a_pass_over_every_role_finds_them():
    """The index (`Roles._assumed`) against `_match` tried on every role: random role ids
    and scopes over a small alphabet, so prefixes, stars and exact ids collide often."""
    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice("ab:") for _ in range(rng.randint(0, 4))) + rng.choice(["", "*"])
    for _ in range(200):
        roles = Roles({word(): ["s"] for _ in range(rng.randint(1, 12))})
        patterns = list(roles._rules)
        for scope in [rng.choice(["assume:", "assum", "", "assume:a"]) + word() for _ in range(30)]:
            assert {pattern for pattern in roles._assumed(scope) if _match(scope, pattern) is not None} == {
                pattern for pattern in patterns if _match(scope, pattern) is not None}, (scope, patterns)


def test_a_long_chain_of_roles_expands_in_steps_along_the_chain():
    """3,000 roles, each assuming the next: one expansion follows the chain once (a pass over
    every role for each scope reached took 9 million matches here)."""
    roles = Roles({f"r{n}": [f"assume:r{n + 1}", f"s{n}"] for n in range(3000)})
    assert len(roles.expand_all(["assume:r0"])) == 6001
