// What a task group is, as a graph to draw: its tasks, the edges between them, what blocks
// it and what can no longer run; and, past `maxNodes`, the same graph with what does not fit
// folded into aggregate nodes; and how events keep a group's entries current. Plain
// functions without the DOM, so Node can test them too.
(function (exports) {
  "use strict";

  const STATES = ["unscheduled", "pending", "running", "completed", "failed", "exception"];
  const UNSUCCESSFUL = new Set(["failed", "exception"]);

  // entries: listTaskGroup's `tasks` ({task, status}). Dependencies outside the group are not drawn.
  function buildModel(entries) {
    const tasks = new Map();
    for (const { task, status } of entries) {
      tasks.set(status.taskId, {
        id: status.taskId, name: (task.metadata && task.metadata.name) || status.taskId, state: status.state,
        requires: task.requires || "all-completed", deps: task.dependencies || [], runs: status.runs.length,
      });
    }
    const dependents = new Map([...tasks.keys()].map((id) => [id, []]));
    const edges = [];
    for (const task of tasks.values()) {
      task.deps = task.deps.filter((dep) => tasks.has(dep));
      for (const dep of task.deps) {
        dependents.get(dep).push(task.id);
        edges.push([dep, task.id]);
      }
    }
    const { blockers, unreachable } = blockage(tasks, dependents);
    return { tasks, dependents, edges, blockers, unreachable, counts: countStates(tasks.values()) };
  }

  // A task that did not complete keeps its `all-completed` dependents from ever running, and
  // those theirs; a task that can never run keeps even its `all-resolved` dependents waiting.
  function blockage(tasks, dependents) {
    const unreachable = new Set();
    const blockers = new Set();
    const queue = [];
    for (const task of tasks.values()) {
      if (!UNSUCCESSFUL.has(task.state)) continue;
      for (const child of dependents.get(task.id)) {
        const waiting = tasks.get(child);
        if (waiting.state === "unscheduled" && waiting.requires === "all-completed") {
          blockers.add(task.id);
          if (!unreachable.has(child)) { unreachable.add(child); queue.push(child); }
        }
      }
    }
    while (queue.length) {
      for (const child of dependents.get(queue.pop())) {
        if (tasks.get(child).state === "unscheduled" && !unreachable.has(child)) {
          unreachable.add(child);
          queue.push(child);
        }
      }
    }
    return { blockers, unreachable };
  }

  function countStates(tasks) {
    const counts = Object.fromEntries(STATES.map((state) => [state, 0]));
    for (const task of tasks) counts[task.state] = (counts[task.state] || 0) + 1;
    return counts;
  }

  // ---- what is drawn ----------------------------------------------------------------------
  // A display node stands for one task or for several (`members`); edges join display nodes.

  function displayGraph(model, maxNodes) {
    let graph = {
      nodes: new Map([...model.tasks.keys()].map((id) => [id, { id, members: [id], kind: "task" }])),
      edges: model.edges.map(([from, to]) => [from, to]),
    };
    if (graph.nodes.size > maxNodes) graph = foldSiblings(graph);
    if (graph.nodes.size > maxNodes) graph = foldChains(graph);
    if (graph.nodes.size > maxNodes) graph = foldLevels(graph, maxNodes);
    for (const node of graph.nodes.values()) describe(node, model);
    return graph;
  }

  function neighbours(graph) {
    const ins = new Map([...graph.nodes.keys()].map((id) => [id, []]));
    const outs = new Map([...graph.nodes.keys()].map((id) => [id, []]));
    for (const [from, to] of graph.edges) { outs.get(from).push(to); ins.get(to).push(from); }
    return { ins, outs };
  }

  // Rebuild the graph with each node mapped to the group it falls in.
  function fold(graph, groupOf, kindOf) {
    const nodes = new Map();
    for (const node of graph.nodes.values()) {
      const id = groupOf(node.id);
      if (!nodes.has(id)) nodes.set(id, { id, members: [], kind: "task", parts: 0 });
      const into = nodes.get(id);
      into.members.push(...node.members);
      into.parts += 1;
    }
    for (const node of nodes.values()) {
      if (node.parts > 1) node.kind = kindOf;
      else node.kind = graph.nodes.get(node.id) ? graph.nodes.get(node.id).kind : node.kind;
      delete node.parts;
    }
    const seen = new Set();
    const edges = [];
    for (const [from, to] of graph.edges) {
      const a = groupOf(from), b = groupOf(to);
      const key = a + ">" + b;
      if (a !== b && !seen.has(key)) { seen.add(key); edges.push([a, b]); }
    }
    return { nodes, edges };
  }

  // Tasks with the same dependencies and the same dependents (a fan-out's children) are one node.
  function foldSiblings(graph) {
    const { ins, outs } = neighbours(graph);
    const bySignature = new Map();
    for (const id of graph.nodes.keys()) {
      const signature = [...ins.get(id)].sort().join(",") + "|" + [...outs.get(id)].sort().join(",");
      if (!bySignature.has(signature)) bySignature.set(signature, []);
      bySignature.get(signature).push(id);
    }
    const groupOf = new Map();
    for (const ids of bySignature.values()) for (const id of ids) groupOf.set(id, ids.length > 1 ? "siblings:" + ids[0] : id);
    return fold(graph, (id) => groupOf.get(id), "siblings");
  }

  // A run of single tasks each with one way in and one way out (a chain) is one node.
  function foldChains(graph) {
    const { ins, outs } = neighbours(graph);
    const linear = (id) => graph.nodes.get(id).kind === "task" && ins.get(id).length === 1 && outs.get(id).length === 1;
    const groupOf = new Map();
    for (const id of graph.nodes.keys()) {
      if (!linear(id) || linear(ins.get(id)[0])) continue;  // only from the head of each run
      const run = [id];
      for (let next = outs.get(id)[0]; linear(next); next = outs.get(next)[0]) run.push(next);
      if (run.length > 1) for (const member of run) groupOf.set(member, "chain:" + id);
    }
    return fold(graph, (id) => groupOf.get(id) || id, "chain");
  }

  // Last resort: nodes at the same depth (longest path from a root), in bands, are one node.
  function foldLevels(graph, maxNodes) {
    const { ins } = neighbours(graph);
    const depth = new Map();
    const depthOf = (start) => {
      const stack = [start];
      while (stack.length) {
        const id = stack[stack.length - 1];
        if (depth.has(id)) { stack.pop(); continue; }
        const pending = ins.get(id).filter((parent) => !depth.has(parent));
        if (pending.length) { stack.push(...pending); continue; }
        depth.set(id, ins.get(id).reduce((deepest, parent) => Math.max(deepest, depth.get(parent) + 1), 0));
        stack.pop();
      }
      return depth.get(start);
    };
    const deepest = Math.max(0, ...[...graph.nodes.keys()].map(depthOf));
    const band = Math.max(1, Math.ceil((deepest + 1) / maxNodes));
    return fold(graph, (id) => "level:" + Math.floor(depth.get(id) / band), "level");
  }

  function describe(node, model) {
    const members = node.members.map((id) => model.tasks.get(id));
    node.counts = countStates(members);
    node.blocker = members.some((task) => model.blockers.has(task.id));
    node.unreachable = members.every((task) => model.unreachable.has(task.id));
    if (node.kind === "task") {
      node.label = members[0].name;
      node.state = members[0].state;
    } else {
      node.label = groupLabel(node, members);
      node.state = dominantState(node.counts);
    }
  }

  function groupLabel(node, members) {
    const names = members.map((task) => task.name);
    let prefix = names[0];
    for (const name of names) while (!name.startsWith(prefix)) prefix = prefix.slice(0, -1);
    prefix = prefix.replace(/[-_.:/ ]+$/, "");
    const what = { siblings: "tasks", chain: "in a chain", level: "at this depth" }[node.kind];
    return (prefix ? prefix + " " : "") + "×" + members.length.toLocaleString("en") + " " + what;
  }

  // The state an aggregate is colored by: what needs attention first.
  function dominantState(counts) {
    for (const state of ["failed", "exception", "running", "pending", "unscheduled"]) if (counts[state]) return state;
    return "completed";
  }

  // A key that changes only when what is drawn changes shape (not when states change).
  function structureKey(graph) {
    return [...graph.nodes.keys()].sort().join(",") + "#" + graph.edges.map((edge) => edge.join(">")).sort().join(",");
  }

  // ---- keeping the group's entries current from events ---------------------------------
  // `entries`: a Map of taskId -> listTaskGroup's entry ({task, status}). An event carries its
  // task's whole status (`payload.status`); events may come twice, or out of order when
  // several processes publish, so a status replaces the one held only if it is further on:
  // more runs, or the same last run further along. A status equal to the one held changes nothing.
  const PROGRESS = { unscheduled: 0, pending: 1, running: 2, completed: 3, failed: 3, exception: 3 };

  function progress(status) {
    const last = status.runs.length ? status.runs[status.runs.length - 1].state : status.state;
    return [status.runs.length, PROGRESS[last] || 0];
  }

  function isNewer(held, incoming) {
    const [heldRuns, heldStep] = progress(held), [runs, step] = progress(incoming);
    return runs !== heldRuns ? runs > heldRuns : step > heldStep;
  }

  // Applies one event to `entries`. Answers what it did: `changed` (a status was replaced)
  // and `unknown` (the taskId of a task not held yet, whose definition the caller fetches).
  // Group events (resolved, sealed) carry no status: nothing drawn changes.
  function applyEvent(entries, event) {
    const status = event.payload && event.payload.status;
    if (!status || !status.taskId) return { changed: false, unknown: null };
    const held = entries.get(status.taskId);
    if (!held) return { changed: false, unknown: status.taskId };
    if (!isNewer(held.status, status)) return { changed: false, unknown: null };
    entries.set(status.taskId, { task: held.task, status });
    return { changed: true, unknown: null };
  }

  // A new listing replaces the entries, except where an event applied meanwhile is further on
  // than what the listing read. Tasks the listing no longer has (expired) are dropped.
  function reconcile(entries, listed) {
    const merged = new Map();
    for (const entry of listed) {
      const held = entries.get(entry.status.taskId);
      merged.set(entry.status.taskId, held && isNewer(entry.status, held.status) ? held : entry);
    }
    return merged;
  }

  Object.assign(exports, { STATES, buildModel, displayGraph, structureKey, countStates, isNewer, applyEvent,
                           reconcile });
})(typeof module !== "undefined" ? module.exports : (window.GroupModel = {}));
