// What is drawn of a group, and where: its tasks, or, where they would not fit the canvas at a
// readable size, the same graph with tasks folded into aggregate nodes; then laid out left to
// right (by dagre, or on a grid of columns when dagre's picture would not fit either). Every
// node drawn is readable when the graph is fitted to the canvas: nothing is ever drawn at a
// scale below GEOMETRY.minScale. Plain functions without the DOM, so Node can test them too.
(function (exports, GroupModel) {
  "use strict";

  // Sizes in graph units; at minScale a node's 12 px label is 9 px on screen.
  const GEOMETRY = { nodeWidth: 170, nodeHeight: 40, rankSep: 40, nodeSep: 14, margin: 20, minScale: 0.75, fitShare: 0.95 };

  // How many ranks fit across a canvas of width × height pixels, and how many nodes down one.
  function limitsFor(width, height, g = GEOMETRY) {
    const room = (pixels) => pixels * g.fitShare / g.minScale - 2 * g.margin;
    return {
      columns: Math.max(1, Math.floor((room(width) + g.rankSep) / (g.nodeWidth + g.rankSep))),
      rows: Math.max(1, Math.floor((room(height) + g.nodeSep) / (g.nodeHeight + g.nodeSep))),
    };
  }

  // The scale at which a laid-out graph fills the canvas (what the page's "fit" uses).
  function fitScale(size, width, height, g = GEOMETRY) {
    return Math.min(1.5, width / size.width, height / size.height) * g.fitShare;
  }

  // The graph to draw on a canvas of `box` ({width, height}), laid out: dagre's layout of the
  // tasks, folded as far as needed to fit; else (no fold fits, or dagre's picture is larger
  // than the shape promised) the grid's, which fits by construction.
  function arrange(model, box, dagre, g = GEOMETRY) {
    const limits = limitsFor(box.width, box.height, g);
    const graph = displayGraph(model, limits);
    if (!graph.grid) {
      layOut(graph, dagre, g);
      if (fitScale(graph.size, box.width, box.height, g) >= g.minScale || graph.nodes.size <= 1) return graph;
    }
    const grid = graph.grid ? graph : displayGraph(model, limits, { grid: true });
    gridLayout(grid, g);
    return grid;
  }

  // ---- folding ----------------------------------------------------------------------------
  // A display node stands for one task or for several (`members`); edges join display nodes.

  function displayGraph(model, limits, { grid = false } = {}) {
    let graph = {
      nodes: new Map([...model.tasks.keys()].map((id) => [id, { id, members: [id], kind: "task" }])),
      edges: model.edges.map(([from, to]) => [from, to]),
    };
    for (const step of [foldSiblings, foldChains]) if (!fits(graph, limits)) graph = step(graph);
    if (grid || !fits(graph, limits)) graph = foldGrid(graph, limits, (id) => model.tasks.get(id).name);
    for (const node of graph.nodes.values()) describe(node, model);
    return graph;
  }

  function neighbours(graph) {
    const ins = new Map([...graph.nodes.keys()].map((id) => [id, []]));
    const outs = new Map([...graph.nodes.keys()].map((id) => [id, []]));
    for (const [from, to] of graph.edges) { outs.get(from).push(to); ins.get(to).push(from); }
    return { ins, outs };
  }

  // Each node's depth: the longest path to it from a task without dependencies.
  function depths(graph) {
    const { ins } = neighbours(graph);
    const depth = new Map();
    for (const start of graph.nodes.keys()) {
      const stack = [start];
      while (stack.length) {
        const id = stack[stack.length - 1];
        if (depth.has(id)) { stack.pop(); continue; }
        const pending = ins.get(id).filter((parent) => !depth.has(parent));
        if (pending.length) { stack.push(...pending); continue; }
        depth.set(id, ins.get(id).reduce((deepest, parent) => Math.max(deepest, depth.get(parent) + 1), 0));
        stack.pop();
      }
    }
    return depth;
  }

  // Whether the graph's shape (ranks by depth, nodes per rank) is within `limits`.
  function fits(graph, limits) {
    const perRank = new Map();
    for (const depth of depths(graph).values()) perRank.set(depth, (perRank.get(depth) || 0) + 1);
    return perRank.size <= limits.columns && Math.max(0, ...perRank.values()) <= limits.rows;
  }

  // Rebuild the graph with each node mapped to the group it falls in. A group of one node is
  // that node, as it was (a task keeps its taskId as its id).
  function fold(graph, groupOf, kindOf) {
    const sizes = new Map();
    for (const id of graph.nodes.keys()) sizes.set(groupOf(id), (sizes.get(groupOf(id)) || 0) + 1);
    const into = (id) => (sizes.get(groupOf(id)) > 1 ? groupOf(id) : id);
    const nodes = new Map();
    for (const node of graph.nodes.values()) {
      const id = into(node.id);
      if (id === node.id) { nodes.set(id, { id, members: [...node.members], kind: node.kind }); continue; }
      if (!nodes.has(id)) nodes.set(id, { id, members: [], kind: kindOf });
      nodes.get(id).members.push(...node.members);
    }
    const seen = new Set();
    const edges = [];
    for (const [from, to] of graph.edges) {
      const a = into(from), b = into(to);
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

  // Last resort: depths in bands, one column each (as many as fit across), and each column's
  // nodes, level by level in name order, cut into as many parts as fit down it.
  function foldGrid(graph, { columns, rows }, nameOf) {
    const depth = depths(graph);
    const band = Math.max(1, Math.ceil((Math.max(0, ...depth.values()) + 1) / columns));
    const columnOf = (id) => Math.floor(depth.get(id) / band);
    const levels = new Map();
    for (const id of graph.nodes.keys()) {
      if (!levels.has(depth.get(id))) levels.set(depth.get(id), []);
      levels.get(depth.get(id)).push(id);
    }
    const perColumn = new Map();
    for (const id of graph.nodes.keys()) perColumn.set(columnOf(id), (perColumn.get(columnOf(id)) || 0) + 1);
    const groupOf = new Map();
    for (const ids of levels.values()) {
      ids.sort((a, b) => naturalOrder(nameOf(graph.nodes.get(a).members[0]), nameOf(graph.nodes.get(b).members[0])));
      ids.forEach((id, index) => {
        const column = columnOf(id);
        groupOf.set(id, perColumn.get(column) <= rows ? id : `part:${column}:${Math.floor(index * rows / ids.length)}`);
      });
    }
    const folded = fold(graph, (id) => groupOf.get(id), "part");
    for (const node of folded.nodes.values()) {
      const levelsIn = node.members.map((member) => depth.get(memberNode(graph, member)));
      node.column = columnOf(memberNode(graph, node.members[0]));
      node.depths = [Math.min(...levelsIn), Math.max(...levelsIn)];
    }
    folded.grid = true;
    return folded;
  }

  // The node of `graph` that holds task `member`.
  function memberNode(graph, member) {
    if (!graph.holder) {
      graph.holder = new Map();
      for (const node of graph.nodes.values()) for (const id of node.members) graph.holder.set(id, node.id);
    }
    return graph.holder.get(member);
  }

  const collator = new Intl.Collator("en", { numeric: true });
  function naturalOrder(a, b) { return collator.compare(a, b); }

  function describe(node, model) {
    const members = node.members.map((id) => model.tasks.get(id));
    node.counts = GroupModel.countStates(members);
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

  // Tasks alike (a fan-out, a chain) share their names' start; a part of a column is named by
  // its first task (its depths are in `detail`, shown on hover).
  function groupLabel(node, members) {
    const names = members.map((task) => task.name).sort(naturalOrder);
    const count = members.length.toLocaleString("en");
    if (node.kind === "part") {
      const [low, high] = node.depths;
      node.detail = low === high ? `tasks at depth ${low}` : `tasks at depths ${low}–${high}`;
      return `${names[0]} +${(members.length - 1).toLocaleString("en")}`;
    }
    let prefix = names[0];
    for (const name of names) while (!name.startsWith(prefix)) prefix = prefix.slice(0, -1);
    prefix = prefix.replace(/[-_.:/ ]+$/, "");
    return (prefix ? prefix + " " : "") + "×" + count + " " + (node.kind === "chain" ? "in a chain" : "tasks");
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

  // A folded node's members, what needs attention first, then by name (test-2 before test-10).
  const ATTENTION = ["failed", "exception", "running", "pending", "unscheduled", "completed"];
  function memberOrder(model, ids) {
    const task = (id) => model.tasks.get(id);
    return [...ids].sort((a, b) => ATTENTION.indexOf(task(a).state) - ATTENTION.indexOf(task(b).state)
      || naturalOrder(task(a).name, task(b).name) || naturalOrder(a, b));
  }

  // ---- layout -----------------------------------------------------------------------------
  // Each node gets its centre (x, y); the graph its `paths` (edge points) and `size`.

  function layOut(graph, dagre, g = GEOMETRY) {
    const layout = new dagre.graphlib.Graph();
    layout.setGraph({ rankdir: "LR", nodesep: g.nodeSep, ranksep: g.rankSep, marginx: g.margin, marginy: g.margin });
    layout.setDefaultEdgeLabel(() => ({}));
    for (const node of graph.nodes.values()) layout.setNode(node.id, { width: g.nodeWidth, height: g.nodeHeight });
    for (const [from, to] of graph.edges) layout.setEdge(from, to);
    dagre.layout(layout);
    for (const node of graph.nodes.values()) Object.assign(node, { x: layout.node(node.id).x, y: layout.node(node.id).y });
    graph.paths = graph.edges.map(([from, to]) => ({ from, to, points: layout.edge(from, to).points }));
    graph.size = { width: layout.graph().width, height: layout.graph().height };
  }

  // The grid: each node in its column, ordered down it by where its dependencies are (then by
  // name), each column centred. An edge within a column is drawn as an arc along its right side.
  function gridLayout(graph, g = GEOMETRY) {
    const columns = new Map();
    for (const node of graph.nodes.values()) {
      if (!columns.has(node.column)) columns.set(node.column, []);
      columns.get(node.column).push(node);
    }
    const { ins } = neighbours(graph);
    const order = [...columns.keys()].sort((a, b) => a - b);
    const tallest = Math.max(...[...columns.values()].map((nodes) => nodes.length));
    const height = tallest * (g.nodeHeight + g.nodeSep) - g.nodeSep + 2 * g.margin;
    order.forEach((column, index) => {
      const nodes = columns.get(column);
      const placed = (id) => graph.nodes.get(id).column < column && graph.nodes.get(id).y !== undefined;
      const weight = (node) => {
        const above = ins.get(node.id).filter(placed).map((id) => graph.nodes.get(id).y);
        return above.length ? above.reduce((sum, y) => sum + y, 0) / above.length : Infinity;
      };
      nodes.sort((a, b) => weight(a) - weight(b) || naturalOrder(a.label, b.label));
      const top = (height - (nodes.length * (g.nodeHeight + g.nodeSep) - g.nodeSep)) / 2;
      nodes.forEach((node, row) => Object.assign(node, {
        x: g.margin + index * (g.nodeWidth + g.rankSep) + g.nodeWidth / 2,
        y: top + row * (g.nodeHeight + g.nodeSep) + g.nodeHeight / 2,
      }));
    });
    graph.paths = graph.edges.map(([from, to]) => ({ from, to, points: gridEdge(graph.nodes.get(from), graph.nodes.get(to), g) }));
    graph.size = { width: order.length * (g.nodeWidth + g.rankSep) - g.rankSep + 2 * g.margin + g.rankSep / 2, height };
  }

  function gridEdge(from, to, g) {
    const half = g.nodeWidth / 2;
    if (from.column !== to.column) {
      const [a, b] = [{ x: from.x + half, y: from.y }, { x: to.x - half, y: to.y }];
      return [a, { x: (a.x + b.x) / 2, y: a.y }, { x: (a.x + b.x) / 2, y: b.y }, b];
    }
    const side = from.x + half, bulge = Math.min(g.rankSep / 2, 8 + Math.abs(to.y - from.y) / 20);
    return [{ x: side, y: from.y }, { x: side + bulge, y: from.y }, { x: side + bulge, y: to.y }, { x: side, y: to.y }];
  }

  Object.assign(exports, { GEOMETRY, limitsFor, fitScale, arrange, displayGraph, fits, structureKey, memberOrder,
                           layOut, gridLayout });
})(typeof module !== "undefined" ? module.exports : (window.GroupFolding = {}),
   typeof module !== "undefined" ? require("./group-model.js") : window.GroupModel);
