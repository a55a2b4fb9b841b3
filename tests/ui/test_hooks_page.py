"""The hooks page in headless Chromium, on a running host: every hook with its schedule, next
fire and latest fires (success linking to the task's group, errors with their first line),
from /api/ui/data/hooks, which a caller without credentials may read (Taskcluster's public
anonymous scopes); a screenshot under tests/output/."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from selenium.webdriver.common.by import By

from tests.api.hooks_fixtures import GROUP, hook_definition, hooks_client, new_queue
from tests.api.hooks_fixtures import hooks_server  # noqa: F401 (a fixture the tests take by name)
from tests.conftest import eventually
from tests.ui.browser import headless_chromium

OUTPUT = Path(__file__).resolve().parents[1] / "output"


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium()
    yield driver
    driver.quit()


def test_the_page_shows_each_hook_and_its_last_fires(hooks_server, browser):
    hooks = hooks_client(hooks_server)
    task_queue_id = new_queue()
    hooks.createHook(GROUP, "page/nightly", hook_definition(task_queue_id, schedule=["0 0 3 * * *"]))
    hooks.createHook(GROUP, "page/greedy", hook_definition(task_queue_id, task={
        **hook_definition(task_queue_id)["task"], "scopes": ["secrets:get:production"]}))
    task_ids = [hooks.triggerHook(GROUP, "page/nightly", {})["taskId"] for _ in range(2)]
    try:
        hooks.triggerHook(GROUP, "page/greedy", {})
    except Exception:
        pass   # refused: the role lacks the scope; recorded as an error fire

    data = requests.get(f"{hooks_server.root_url}/api/ui/data/hooks", timeout=10).json()   # no credentials
    mine = {hook["hookId"]: hook for hook in data["hooks"] if hook["hookGroupId"] == GROUP}
    assert [fire["taskId"] for fire in mine["page/nightly"]["lastFires"]] == task_ids[::-1]
    assert mine["page/nightly"]["lastFires"][0]["taskGroupId"] == task_ids[1]
    assert mine["page/nightly"]["nextScheduledDate"].endswith("T03:00:00.000Z")
    assert mine["page/greedy"]["lastFires"][0]["result"] == "error"

    browser.get(f"{hooks_server.root_url}/api/ui/hooks")
    eventually(lambda: browser.execute_script("return document.body.dataset.rendered") == "1", timeout=20,
               message="the page drawn")
    rows = {row.get_attribute("data-hook"): row for row in browser.find_elements(By.CSS_SELECTOR, "tr.hook")}
    nightly, greedy = rows[f"{GROUP}/page/nightly"], rows[f"{GROUP}/page/greedy"]
    assert "0 0 3 * * *" in nightly.text and "a test hook" in nightly.text
    links = [link.get_attribute("href") for link in nightly.find_elements(By.CSS_SELECTOR, ".fire a")]
    assert links == [f"{hooks_server.root_url}/api/ui/task-group/{task_id}" for task_id in task_ids[::-1]]
    assert [fire.get_attribute("data-result") for fire in greedy.find_elements(By.CSS_SELECTOR, ".fire")] == ["error"]
    assert "does not have sufficient scopes" in greedy.text
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "hooks.png"))
