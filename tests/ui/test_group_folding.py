"""group-folding.js under Node with the page's own dagre: whatever a group's size and shape,
what is drawn fits the canvas with every node at a readable scale, task by task while that
fits, folded into aggregates otherwise; and an aggregate's members in a useful order."""

import json
import subprocess

import pytest

from tests.conftest import ROOT

STATIC = ROOT / "shared" / "ui" / "static"
PRELUDE = """
const F = require(STATIC + '/group-folding.js'), M = require(STATIC + '/group-model.js');
require('vm').runInThisContext(require('fs').readFileSync(STATIC + '/vendor/dagre.min.js', 'utf8'));
const entry = (id, deps, state, name) => ({task: {dependencies: deps, metadata: {name: name || id}},
                                           status: {taskId: id, state, runs: []}});
let seed = 7;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const SHAPES = {
  fan: (n) => [entry('root', [], 'completed', 'decision'),
               ...[...Array(n - 2).keys()].map((i) => entry('f' + i, ['root'], i % 7 ? 'pending' : 'failed', 'test-' + i)),
               entry('end', [...Array(n - 2).keys()].map((i) => 'f' + i), 'unscheduled', 'gather')],
  independent: (n) => [...Array(n).keys()].map((i) => entry('i' + i, [], 'pending', 'job-' + i)),
  chain: (n) => [...Array(n).keys()].map((i) => entry('c' + i, i ? ['c' + (i - 1)] : [], 'pending', 'step-' + i)),
  layered: (n) => [...Array(n).keys()].map((i) => {
    const level = Math.floor(i / 20), deps = level ? [0, 1].map(() => 'n' + ((level - 1) * 20 + Math.floor(random() * 20))) : [];
    return entry('n' + i, [...new Set(deps)], 'pending', 'build-' + level + '-' + (i % 20));
  }),
  diamond: (n) => [entry('top', [], 'completed'), ...[...Array(n - 2).keys()].map((i) => entry('m' + i, ['top'], 'running', 'mid-' + i)),
                   entry('bottom', [...Array(n - 2).keys()].map((i) => 'm' + i), 'unscheduled')],
};
const CANVAS = {width: 980, height: 842};   // a 1400 x 900 window beside the details pane
"""
SHAPE = PRELUDE + """
const out = [];
for (const [shape, n] of CASES) {
  const tasks = SHAPES[shape](n);
  const model = M.buildModel(tasks);
  const graph = F.arrange(model, CANVAS, dagre);
  const members = [...graph.nodes.values()].flatMap((node) => node.members);
  out.push({shape, n, nodes: graph.nodes.size, grid: !!graph.grid, kinds: [...new Set([...graph.nodes.values()].map((n) => n.kind))],
            scale: F.fitScale(graph.size, CANVAS.width, CANVAS.height), minScale: F.GEOMETRY.minScale,
            everyTaskOnce: members.length === tasks.length && new Set(members).size === tasks.length,
            labels: [...graph.nodes.values()].map((node) => node.label)});
}
console.log(JSON.stringify(out));
"""
CASES = [("fan", 300), ("independent", 300), ("chain", 300), ("layered", 300), ("diamond", 300),
         ("fan", 320), ("fan", 10), ("fan", 18), ("layered", 1000), ("fan", 10000), ("layered", 10000)]


def run_node(script: str, **constants):
    """Run `script` under Node with STATIC (the page's folder) and `constants` defined; what it
    printed, as JSON."""
    defined = "".join(f"const {name} = {json.dumps(value)};\n" for name, value in
                      {"STATIC": str(STATIC), **constants}.items())
    result = subprocess.run(["node", "-e", defined + script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _arranged() -> list[dict]:
    return run_node(SHAPE, CASES=CASES)


@pytest.fixture(scope="module")
def arranged():
    return {(each["shape"], each["n"]): each for each in _arranged()}


@pytest.mark.parametrize("case", CASES, ids=[f"{shape}-{n}" for shape, n in CASES])
def test_every_group_fits_the_canvas_readably_with_every_task_drawn_once(arranged, case):
    each = arranged[case]
    assert each["scale"] >= each["minScale"], each   # at 300 tasks the old view drew nodes 1 pixel tall
    assert each["everyTaskOnce"]


def test_what_fits_is_drawn_task_by_task_and_the_rest_is_folded(arranged):
    assert arranged["fan", 10]["nodes"] == 10 and arranged["fan", 10]["kinds"] == ["task"]
    assert arranged["fan", 18]["nodes"] == 18   # 16 side by side still fit down the canvas
    # Exactly 300 is folded as 320 is (the old view folded past 300 only).
    assert arranged["fan", 300]["labels"] == ["decision", "test ×298 tasks", "gather"]
    assert arranged["fan", 320]["nodes"] == 3
    assert arranged["chain", 300]["labels"] == ["step-0", "step ×298 in a chain", "step-299"]
    assert arranged["independent", 300]["labels"] == ["job ×300 tasks"]
    # No fan-out and no chain to fold: a grid of parts of its depths, as many as fit.
    layered = arranged["layered", 300]
    assert layered["grid"] and 1 < layered["nodes"] < 300 and "part" in layered["kinds"]
    assert all(label.startswith("build-") for label in layered["labels"])
    assert any(label.endswith((" +1", " +2", " +3", " +4", " +5")) for label in layered["labels"])   # by its first task


MEMBERS = PRELUDE + """
const model = M.buildModel([entry('a', [], 'completed', 'test-10'), entry('b', [], 'failed', 'test-2'),
                            entry('c', [], 'completed', 'test-9'), entry('d', [], 'failed', 'test-1')]);
console.log(JSON.stringify(F.memberOrder(model, ['a', 'b', 'c', 'd']).map((id) => model.tasks.get(id).name)));
"""


def test_an_aggregates_members_come_failures_first_then_in_name_order():
    assert run_node(MEMBERS) == ["test-1", "test-2", "test-9", "test-10"]
