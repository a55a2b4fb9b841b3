"""Role expansion through `assume:`, as Taskcluster's auth service does it."""

import pytest

from shared.auth.roles import MAX_SCOPES, RoleExpansionTooLarge, Roles


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
