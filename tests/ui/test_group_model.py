"""group-model.js under Node (the same file the page loads): blockage, and events applied to
a group's entries. (What is drawn of a group: test_group_folding.py.)"""

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
console.log(JSON.stringify(out));
"""


def run_model(script: str) -> dict:
    """Run `script` (with `%s` where the model's path goes) under Node; what it printed, as JSON."""
    result = subprocess.run(["node", "-e", script % json.dumps(str(MODEL))], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_blockage():
    out = run_model(SCRIPT)
    # a failed: b cannot run, nor c behind it; r (all-resolved) still can; an edge from outside is not drawn.
    assert out["blockers"] == ["a"] and out["unreachable"] == ["b", "c"]
    assert out["edges"] == [["a", "b"], ["b", "c"], ["a", "r"]]


EVENTS = """
const M = require(%s);
const status = (id, ...runs) => ({taskId: id, state: runs.length ? runs[runs.length - 1] : 'unscheduled',
                                  runs: runs.map((state, runId) => ({runId, state}))});
const event = (s) => ({exchange: 'task-x', payload: {status: s}});
const entries = new Map([['a', {task: {metadata: {name: 'a'}}, status: status('a', 'pending')}]]);
const out = {};
out.running = M.applyEvent(entries, event(status('a', 'running')));
out.stale = M.applyEvent(entries, event(status('a', 'pending')));          // late, or a repeat
out.again = M.applyEvent(entries, event(status('a', 'running')));
out.rerun = M.applyEvent(entries, event(status('a', 'exception', 'pending')));
out.unknown = M.applyEvent(entries, event(status('b', 'pending')));
out.group = M.applyEvent(entries, {exchange: 'task-group-resolved', payload: {taskGroupId: 'g'}});
out.held = entries.get('a').status.runs.map((run) => run.state);
out.keptTask = entries.get('a').task.metadata.name;
// A listing read before the latest event does not undo it; one read after it wins; gone is gone.
const listed = [{task: {}, status: status('a', 'pending')}, {task: {}, status: status('c', 'completed')}];
const merged = M.reconcile(entries, listed);
out.merged = [...merged.keys()];
out.mergedA = merged.get('a').status.runs.length;
out.newer = M.reconcile(entries, [{task: {}, status: status('a', 'exception', 'completed')}]).get('a').status.state;
console.log(JSON.stringify(out));
"""


def test_events_move_statuses_forward_only():
    out = run_model(EVENTS)
    assert out["running"] == {"changed": True, "unknown": None}
    assert out["stale"] == out["again"] == out["group"] == {"changed": False, "unknown": None}
    assert out["rerun"] == {"changed": True, "unknown": None}
    assert out["unknown"] == {"changed": False, "unknown": "b"}
    assert out["held"] == ["exception", "pending"] and out["keptTask"] == "a"
    assert out["merged"] == ["a", "c"] and out["mergedA"] == 2 and out["newer"] == "completed"
