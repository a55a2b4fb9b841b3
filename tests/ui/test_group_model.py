"""group-model.js under Node (the same file the page loads): blockage and folding."""

import json
import subprocess

from tests.conftest import ROOT

MODEL = ROOT / "shared" / "ui" / "static" / "group-model.js"
SCRIPT = """
const M = require(%s);
const entry = (id, deps, state, requires) => ({task: {dependencies: deps, requires, metadata: {name: id}},
                                               status: {taskId: id, state, runs: []}});
const out = {};
let model = M.buildModel([entry('a', [], 'failed'), entry('b', ['a'], 'unscheduled'), entry('c', ['b'], 'unscheduled'),
                          entry('r', ['a'], 'unscheduled', 'all-resolved'), entry('d', [], 'completed'),
                          entry('outside', ['elsewhere'], 'pending')]);
out.blockers = [...model.blockers]; out.unreachable = [...model.unreachable].sort(); out.edges = model.edges;
const tasks = [entry('root', [], 'completed')];
for (let i = 0; i < 1000; i++) tasks.push(entry('f' + i, ['root'], 'pending'));
tasks.push(entry('end', tasks.slice(1).map((t) => t.status.taskId), 'unscheduled'));
const graph = M.displayGraph(M.buildModel(tasks), 300);
out.folded = [...graph.nodes.values()].map((n) => [n.kind, n.members.length]);
out.foldedEdges = graph.edges.length;
out.small = M.displayGraph(M.buildModel(tasks.slice(0, 10)), 300).nodes.size;
console.log(JSON.stringify(out));
"""


def test_blockage_and_folding():
    result = subprocess.run(["node", "-e", SCRIPT % json.dumps(str(MODEL))], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # a failed: b cannot run, nor c behind it; r (all-resolved) still can; an edge from outside is not drawn.
    assert out["blockers"] == ["a"] and out["unreachable"] == ["b", "c"]
    assert out["edges"] == [["a", "b"], ["b", "c"], ["a", "r"]]
    assert out["folded"] == [["task", 1], ["siblings", 1000], ["task", 1]] and out["foldedEdges"] == 2
    assert out["small"] == 10  # what fits is drawn task by task
