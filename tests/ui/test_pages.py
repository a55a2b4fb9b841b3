"""Which file answers which /api/ui/ path (no browser needed)."""

from shared.ui.pages import page


def test_the_list_the_group_page_and_the_static_files():
    assert b"Task groups" in page("").body and page("").content_type == "text/html"
    group = page("task-group/ZW3rUY6FRh2A8Mk3ZPd8wA")
    assert group.status == 200 and b"group-view.js" in group.body
    assert page("static/group-model.js").content_type == "application/javascript"
    assert page("static/vendor/dagre.min.js").status == 200  # bundled by `make ui`
    hooks = page("hooks")
    assert hooks.status == 200 and b"data/hooks" in hooks.body and hooks.content_type == "text/html"


def test_nothing_else_is_served():
    for path in ("static/../pages.py", "static/%2e%2e/pages.py", "pages.py", "task-group/not-an-id",
                 "static/", "../../function_app.py"):
        assert page(path).status == 404, path
