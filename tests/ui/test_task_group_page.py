"""The task-group page in headless Chromium, on a real group of a running host: nodes, edges,
state colors, the blocked part, live updates by the group's events without reloading or
re-listing (and polling where the host has no bus), details; screenshots under tests/output/."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests
import taskcluster
from selenium.webdriver.common.by import By

from shared.domain.ids import new_slugid
from tests.conftest import eventually, make_task, start_server
from tests.ui.browser import headless_chromium

OUTPUT = Path(__file__).resolve().parents[1] / "output"
# The colors of graph.css, as the browser computes them.
COLORS = {"completed": "rgb(39, 174, 96)", "running": "rgb(47, 128, 237)", "pending": "rgb(242, 201, 76)",
          "failed": "rgb(235, 87, 87)", "unscheduled": "rgb(189, 189, 189)"}


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium()
    yield driver
    driver.quit()


def _claim(queue, task_queue_id: str) -> str:
    claim = queue.claimWork(task_queue_id, {"workerGroup": "ui", "workerId": "w", "tasks": 1})["tasks"][0]
    return str(claim["runId"])


@pytest.fixture
def group(queue):
    """build (completed) -> test-a (running), test-b (pending), lint (failed) -> ship (cannot run).
    Each task has a task queue of its own, so each is claimed exactly when wanted."""
    group_id, prefix = new_slugid(), new_slugid()[:8].replace("_", "x").replace("-", "y")
    ids = {name: new_slugid() for name in ("build", "test-a", "test-b", "lint", "ship")}
    requires = {"build": [], "test-a": ["build"], "test-b": ["build"], "lint": ["build"],
                "ship": ["test-a", "test-b", "lint"]}
    queues = {name: f"ui-{prefix}/{name}" for name in ids}
    for name, task_id in ids.items():
        queue.createTask(task_id, make_task(queues[name], taskGroupId=group_id,
                                            dependencies=[ids[each] for each in requires[name]],
                                            metadata={"name": name, "description": "browser test", "owner": "t@e.com",
                                                      "source": "https://example.com/ui"}))
    queue.reportCompleted(ids["build"], _claim(queue, queues["build"]))
    _claim(queue, queues["test-a"])
    queue.reportFailed(ids["lint"], _claim(queue, queues["lint"]))
    edges = {(ids[dependency], ids[name]) for name, deps in requires.items() for dependency in deps}
    return group_id, ids, queues, edges


def _rendered(browser, at_least: int = 1) -> bool:
    return int(browser.execute_script("return Number(document.body.dataset.rendered || 0)")) >= at_least


def _mode(browser) -> str:
    return browser.find_element(By.ID, "mode").get_attribute("data-mode")


def _stats(browser) -> dict:
    """How many times the page listed the group, and how many events it applied."""
    return browser.execute_script("return Object.assign({}, window.taskGroupView.stats)")


def _nodes(browser) -> dict[str, dict]:
    return browser.execute_script("""
        const found = {};
        for (const g of document.querySelectorAll('#nodes g.node')) {
          found[g.dataset.taskId || g.dataset.id] = {state: g.dataset.state, classes: g.getAttribute('class'),
            fill: getComputedStyle(g.querySelector('rect.body')).fill, label: g.querySelector('.label').textContent};
        }
        return found;""")


def test_a_real_group_is_drawn_as_its_graph_colored_by_state_and_kept_current(browser, server, queue, group):
    group_id, ids, queues, edges = group
    browser.get(f"{server.root_url}/api/ui/task-group/{group_id}")
    eventually(lambda: _rendered(browser), timeout=20, message="the first drawing")

    nodes = _nodes(browser)
    assert set(nodes) == set(ids.values())
    drawn_edges = {(path.get_attribute("data-from"), path.get_attribute("data-to"))
                   for path in browser.find_elements(By.CSS_SELECTOR, "#edges path.edge")}
    assert drawn_edges == edges
    expected = {"build": "completed", "test-a": "running", "test-b": "pending", "lint": "failed",
                "ship": "unscheduled"}
    for name, state in expected.items():
        node = nodes[ids[name]]
        assert (node["state"], node["fill"], node["label"]) == (state, COLORS[state], name)
    # Blocked: lint blocks the graph, ship can no longer run, and the edge into ship says so.
    assert "blocker" in nodes[ids["lint"]]["classes"].split()
    assert "unreachable" in nodes[ids["ship"]]["classes"].split()
    assert "blocked by 1 task(s), 1 cannot run" in browser.find_element(By.ID, "status-line").text
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-group.png"))

    # Live: the page follows the group's events without reloading, and without listing it again.
    eventually(lambda: _mode(browser) == "live", timeout=10, message="the page following the group's events")
    browser.execute_script("window.stillTheSamePage = true")
    lists_before = _stats(browser)["lists"]
    completed_at = time.monotonic()
    queue.reportCompleted(ids["test-a"], "0")
    eventually(lambda: _nodes(browser)[ids["test-a"]]["state"] == "completed", timeout=5,
               message="test-a turning completed on the page")
    took = time.monotonic() - completed_at
    assert _nodes(browser)[ids["test-a"]]["fill"] == COLORS["completed"]
    stats = _stats(browser)
    assert stats["lists"] == lists_before and stats["events"] >= 1, stats   # the event did it, not a re-list
    assert browser.execute_script("return window.stillTheSamePage") is True
    assert browser.find_element(By.ID, "mode").text == "live"
    browser.save_screenshot(str(OUTPUT / "task-group-live.png"))
    print(f"test-a completed on the page {took:.2f} s after reportCompleted, by its event")

    # A task added to the group is drawn from its task-defined event.
    added = new_slugid()
    queue.createTask(added, make_task(f"ui-{new_slugid()[:8].replace('_', 'x').replace('-', 'y')}/late",
                                      taskGroupId=group_id, dependencies=[ids["ship"]],
                                      metadata={"name": "late", "description": "added later", "owner": "t@e.com",
                                                "source": "https://example.com/ui"}))
    eventually(lambda: added in _nodes(browser), timeout=5, message="the new task drawn")
    assert _nodes(browser)[added]["label"] == "late" and _stats(browser)["lists"] == lists_before

    # Details: clicking a task shows its definition and runs.
    browser.find_element(By.CSS_SELECTOR, f'#nodes g[data-task-id="{ids["lint"]}"]').click()
    summary = eventually(lambda: browser.find_elements(By.ID, "task-summary"), timeout=10, message="details")
    assert ids["lint"] in summary[0].text and "failed" in summary[0].text
    assert queues["lint"] in browser.find_element(By.ID, "task-definition").text
    assert "run 0: failed" in browser.find_element(By.ID, "details").text
    # Its artifacts: the run's results document (the queue's s3 artifact), linked to getArtifact.
    results = eventually(lambda: browser.find_elements(By.PARTIAL_LINK_TEXT, "public/results.json"), timeout=10,
                         message="the run's results document listed")
    assert results[0].text == "public/results.json (s3)"
    assert requests.get(results[0].get_attribute("href"), timeout=10).json()["state"] == "failed"
    browser.save_screenshot(str(OUTPUT / "task-group-details.png"))


def test_without_a_bus_the_page_polls(browser, azurite, tmp_path):
    """A host with no event bus: the feed endpoint says so, and the page re-lists instead."""
    server = start_server(azurite, tmp_path, EVENTS_AMQP_URL="")
    try:
        queue = server.client()
        group_id, task_id, task_queue_id = new_slugid(), new_slugid(), f"ui-{new_slugid()[:6].lower()}x/poll"
        queue.createTask(task_id, make_task(task_queue_id, taskGroupId=group_id))
        browser.get(f"{server.root_url}/api/ui/task-group/{group_id}")
        eventually(lambda: _rendered(browser) and _mode(browser) == "polling", timeout=20, message="polling")
        assert "no event bus is configured" in browser.find_element(By.ID, "mode").get_attribute("title")
        queue.reportCompleted(task_id, _claim(queue, task_queue_id))
        eventually(lambda: _nodes(browser)[task_id]["state"] == "completed", timeout=20, message="a re-list")
        assert _stats(browser)["lists"] >= 2 and _stats(browser)["events"] == 0
    finally:
        server.stop()


def test_the_list_of_groups_links_to_each(browser, server, queue, group):
    group_id = group[0]
    browser.get(f"{server.root_url}/api/ui/")
    link = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, f'a[href="/api/ui/task-group/{group_id}"]'),
                      timeout=10, message="the group in the list")
    changed = link[0].find_element(By.XPATH, "../../td[2]").text
    assert changed.startswith("20"), changed  # when the group last changed, as storage wrote it
    link[0].click()
    eventually(lambda: _rendered(browser), timeout=20, message="the group's page")
    assert len(_nodes(browser)) == 5


SYNTHETIC_10000 = """
const entry = (id, deps, state, name) => ({task: {dependencies: deps, metadata: {name}},
                                           status: {taskId: id, state, runs: []}});
const tasks = [entry('root', [], 'completed', 'decision')];
const fan = [];
for (let i = 0; i < 9498; i++) {
  fan.push('f' + i);
  tasks.push(entry('f' + i, ['root'], i < 6000 ? 'completed' : i < 6040 ? 'running' : i < 6042 ? 'failed' : 'pending',
                   'test-chunk-' + i));
}
tasks.push(entry('fanin', fan, 'unscheduled', 'gather'));
let previous = 'fanin';
for (let i = 0; i < 500; i++) { tasks.push(entry('c' + i, [previous], 'unscheduled', 'step-' + i)); previous = 'c' + i; }
const started = performance.now();
window.taskGroupView.render({tasks, at: new Date()});
return performance.now() - started;
"""


def test_ten_thousand_tasks_fold_into_a_graph_that_fits(browser, server):
    browser.get(f"{server.root_url}/api/ui/task-group/{new_slugid()}?static")
    eventually(lambda: browser.execute_script("return !!window.taskGroupView"), timeout=10, message="the page")
    took_ms = browser.execute_script(SYNTHETIC_10000)
    nodes = _nodes(browser)
    assert len(nodes) <= 300 and took_ms < 10_000
    labels = {node["label"] for node in nodes.values()}
    assert "test-chunk ×9,498 tasks" in labels
    notice = browser.find_element(By.ID, "notice").text
    assert notice.startswith("10,000 tasks drawn as")
    counts = browser.find_element(By.ID, "counts").text
    assert "completed 6,001" in counts and "running 40" in counts and "failed 2" in counts
    # The two failed chunks block the fan-in and the chain behind it.
    assert "blocked by 2 task(s), 501 cannot run" in browser.find_element(By.ID, "status-line").text
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-group-10000.png"))
    print(f"10,000 tasks drawn as {len(nodes)} nodes in {took_ms:.0f} ms")


def test_a_tasks_details_show_its_index_entries(browser, server, queue):
    """The index paths a task's routes name, and what each holds: the task itself once it
    completed, or another task that outranks it."""
    group_id, task_queue_id = new_slugid(), f"ui-{new_slugid()[:8].replace('_', 'x').replace('-', 'y')}/indexed"
    space = f"ui{new_slugid()[:8].lower().replace('_', 'x').replace('-', 'y')}"
    task_id = new_slugid()
    queue.createTask(task_id, make_task(task_queue_id, taskGroupId=group_id,
                                        routes=[f"index.{space}.latest", f"index.{space}.pinned"]))
    index = taskcluster.Index({"rootUrl": server.root_url, "credentials": server.credentials})
    other = new_slugid()
    index.insertTask(f"{space}.pinned", {"taskId": other, "rank": 99, "data": {},
                                         "expires": make_task(task_queue_id)["deadline"]})
    queue.reportCompleted(task_id, _claim(queue, task_queue_id))
    eventually(lambda: _found(index, f"{space}.latest"), timeout=10, message="the task indexed")
    browser.get(f"{server.root_url}/api/ui/task-group/{group_id}")
    eventually(lambda: _rendered(browser), timeout=20, message="the first drawing")
    browser.find_element(By.CSS_SELECTOR, f'#nodes g[data-task-id="{task_id}"]').click()
    rows = eventually(lambda: (lambda found: found if len(found) == 2 and all(
        row.get_attribute("data-task-id") for row in found) else None)(
        browser.find_elements(By.CSS_SELECTOR, "#index-entries .index-entry")), timeout=10, message="the index entries")
    shown = {row.get_attribute("data-path"): (row.get_attribute("data-task-id"), row.text) for row in rows}
    assert shown[f"{space}.latest"][0] == task_id and "rank 0" in shown[f"{space}.latest"][1]
    assert shown[f"{space}.pinned"][0] == other and f"now holds task {other}" in shown[f"{space}.pinned"][1]
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-index-entries.png"))


def _found(index, path: str) -> bool:
    try:
        return bool(index.findTask(path))
    except taskcluster.TaskclusterRestFailure:
        return False
