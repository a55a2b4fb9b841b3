"""The task-group page in headless Chromium, on a real group of a running host: nodes, edges,
state colors, the blocked part, live updates by the group's events without reloading or
re-listing (and polling where the host has no bus), details; screenshots under tests/output/."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests
from selenium.webdriver.common.by import By

from shared.domain.ids import new_slugid
from taskq.scheduler import Scheduler
from tests.conftest import eventually, make_task, start_server
from tests.taskq_worker.conftest import start_worker  # noqa: F401  (the fixture)
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


def test_the_list_of_groups_shows_names_states_and_times(browser, server, queue, group, tmp_path):
    group_id, ids = group[0], group[1]
    graph_id = new_slugid()
    node = {"task": make_task(f"ui-{new_slugid()[:8].lower().replace('_', 'x').replace('-', 'y')}/graph",
                              payload={}, metadata={"name": "only-step", "description": "d", "owner": "t@e.com",
                                                    "source": "https://example.com/ui"})}
    scheduler = Scheduler({"rootUrl": server.root_url, "credentials": server.credentials, "maxRetries": 0})
    scheduler.createTaskGraph(graph_id, {"tasks": {"only-step": {"requires": [], "reruns": 0, **node}}})
    browser.get(f"{server.root_url}/api/ui/")
    rows = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#list tbody tr"), timeout=10,
                      message="the list of groups")
    by_id = {row.get_attribute("data-task-group-id"): row for row in rows}
    mine = by_id[group_id]
    names = mine.find_element(By.CSS_SELECTOR, "a.names").text
    assert names.endswith(", …") and len(names.removesuffix(", …").split(", ")) == 3   # three of its five
    assert set(names.removesuffix(", …").split(", ")) <= {"build", "test-a", "test-b", "lint", "ship"}
    assert mine.find_element(By.CSS_SELECTOR, ".group-state").text == "unresolved"
    assert mine.find_element(By.CSS_SELECTOR, ".changed").text.endswith(("ago", "just now"))
    assert mine.find_element(By.CSS_SELECTOR, ".changed").get_attribute("title").startswith("20")
    graph_row = by_id[graph_id]
    assert graph_row.find_element(By.CSS_SELECTOR, "a.names").text == "only-step"
    assert graph_row.find_element(By.CSS_SELECTOR, ".group-state").text == "graph running"
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-groups.png"))
    mine.find_element(By.CSS_SELECTOR, "a.names").click()
    eventually(lambda: _rendered(browser), timeout=20, message="the group's page")
    assert len(_nodes(browser)) == len(ids)


def test_a_finished_tasks_log_is_shown_in_its_details(browser, server, queue, start_worker, new_task, task_id):
    """The log is read from Blob Storage by the browser (getArtifact redirects there): it needs
    Azurite's CORS rule, which the local host sets as it starts."""
    start_worker(new_task()["taskQueueId"])
    queue.createTask(task_id, new_task(payload={"command": [["sh", "-c", "echo hello from the log pane"]],
                                                "maxRunTime": 60}))
    eventually(lambda: queue.status(task_id)["status"]["state"] == "completed", timeout=30, message="completed")
    group_id = queue.task(task_id)["taskGroupId"]
    browser.get(f"{server.root_url}/api/ui/task-group/{group_id}")
    eventually(lambda: _rendered(browser), timeout=20, message="the first drawing")
    browser.find_element(By.CSS_SELECTOR, f'#nodes g[data-task-id="{task_id}"]').click()
    shown = "return (document.getElementById('run-log') || {}).textContent || ''"   # the pane is redrawn on events
    log = eventually(lambda: (lambda text: text if "hello from the log pane" in text else None)(
        browser.execute_script(shown)), timeout=15, message="the log's text in the pane")
    assert "exit code 0" in log and "no log to show" not in log
    browser.execute_script("document.getElementById('run-log').scrollIntoView()")
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-group-log.png"))


def _readable(browser) -> dict:
    """How the drawn graph sits on the canvas: the fitted scale, the smallest label on screen,
    and the nodes not wholly inside the canvas."""
    return browser.execute_script("""
        const canvas = document.getElementById('graph').getBoundingClientRect();
        const nodes = [...document.querySelectorAll('#nodes g.node')];
        const inside = (r) => r.left >= canvas.left - 1 && r.right <= canvas.right + 1 && r.top >= canvas.top - 1
                              && r.bottom <= canvas.bottom + 1;
        return {scale: window.taskGroupView.scale(), minScale: GroupFolding.GEOMETRY.minScale, nodes: nodes.length,
                smallestLabel: Math.min(...nodes.map((g) => g.querySelector('.label').getBoundingClientRect().height)),
                outside: nodes.filter((g) => !inside(g.querySelector('rect.body').getBoundingClientRect())).length};""")


def _graph_of(n: int, task_queue_id: str) -> dict:
    """A decision task, a fan-out of n - 2 tests, and a task gathering them: a graph as CI makes."""
    def node(label: str, *requires: str) -> dict:
        return {"requires": list(requires), "reruns": 0,
                "task": make_task(task_queue_id, payload={}, metadata={"name": label, "description": "d",
                                                                       "owner": "t@e.com",
                                                                       "source": "https://example.com/ui"})}
    tests = [f"test-{index}" for index in range(n - 2)]
    return {"tasks": {"decision": node("decision"), **{label: node(label, "decision") for label in tests},
                      "gather": node("gather", *tests)}}


def test_a_300_task_graph_is_drawn_readably_and_each_node_can_be_clicked(browser, server, queue):
    """At exactly 300 tasks the page drew every task, 1 pixel tall; it now folds what does not fit."""
    task_queue_id = f"ui-{new_slugid()[:8].lower().replace('_', 'x').replace('-', 'y')}/three-hundred"
    graph_id = new_slugid()
    scheduler = Scheduler({"rootUrl": server.root_url, "credentials": server.credentials, "maxRetries": 0})
    scheduler.createTaskGraph(graph_id, _graph_of(300, task_queue_id))
    eventually(lambda: scheduler.getTaskGraphStatus(graph_id)["status"]["state"] == "running", timeout=60,
               message="the graph created")
    browser.get(f"{server.root_url}/api/ui/task-group/{graph_id}")
    eventually(lambda: _rendered(browser) and len(_nodes(browser)) == 3, timeout=30, message="the graph drawn")
    shown = _readable(browser)
    assert shown["scale"] >= shown["minScale"] and shown["outside"] == 0, shown
    assert shown["smallestLabel"] >= 8, shown   # pixels on screen
    labels = {node["label"] for node in _nodes(browser).values()}
    assert labels == {"decision", "test ×298 tasks", "gather"}
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / "task-group-300.png"))
    # The folded node lists its members, in name order (test-2 before test-10).
    browser.find_element(By.CSS_SELECTOR, "#nodes g.aggregate").click()
    members = eventually(lambda: browser.find_elements(By.CSS_SELECTOR, "#details tr.member"), timeout=10,
                         message="the members listed")
    assert [row.find_element(By.XPATH, "td[1]").text for row in members[:12]] == [f"test-{i}" for i in range(12)]
    members[10].click()
    summary = eventually(lambda: browser.find_elements(By.ID, "task-summary"), timeout=10, message="its details")
    assert "state  unscheduled" in summary[0].text   # until the decision task completes
    assert browser.find_element(By.CSS_SELECTOR, "#details h2").text == "test-10"


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
    assert len(nodes) == 4 and took_ms < 10_000
    shown = _readable(browser)
    assert shown["scale"] >= shown["minScale"] and shown["outside"] == 0 and shown["smallestLabel"] >= 8, shown
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


SYNTHETIC_LAYERED = """
const entry = (id, deps, state, name) => ({task: {dependencies: deps, metadata: {name}},
                                           status: {taskId: id, state, runs: []}});
let seed = 11;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const tasks = [];
for (let i = 0; i < arguments[0]; i++) {
  const level = Math.floor(i / 20), deps = level ? [0, 1].map(() => 'n' + ((level - 1) * 20 + Math.floor(random() * 20))) : [];
  tasks.push(entry('n' + i, [...new Set(deps)], i % 23 ? 'completed' : 'failed', 'build-' + level + '-' + (i % 20)));
}
window.taskGroupView.render({tasks, at: new Date()});
"""


@pytest.mark.parametrize("size", [300, 10_000])
def test_a_graph_without_fan_outs_or_chains_is_drawn_as_a_readable_grid(browser, server, size):
    """Nothing alike to fold (each task of a level has dependencies of its own): the depths fold
    into as many columns, and each column's tasks into as many parts, as the canvas holds."""
    browser.get(f"{server.root_url}/api/ui/task-group/{new_slugid()}?static")
    eventually(lambda: browser.execute_script("return !!window.taskGroupView"), timeout=10, message="the page")
    browser.execute_script(SYNTHETIC_LAYERED, size)
    shown = _readable(browser)
    assert 1 < shown["nodes"] < size and shown["outside"] == 0, shown
    assert shown["scale"] >= shown["minScale"] and shown["smallestLabel"] >= 8, shown
    assert any(node["label"].startswith("build-") and " +" in node["label"] for node in _nodes(browser).values())
    assert "tasks at depths " in browser.find_element(By.CSS_SELECTOR, "#nodes g.aggregate title").get_attribute(
        "textContent")
    OUTPUT.mkdir(exist_ok=True)
    browser.save_screenshot(str(OUTPUT / f"task-group-grid-{size}.png"))
