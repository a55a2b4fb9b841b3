// The task-group page: draws the group as its graph, folded to fit the window
// (group-folding.js), keeps it current, and shows what is clicked (task-details.js).
(function () {
  "use strict";

  const { QUEUE, getJson } = TaskDetails;
  const { nodeWidth: NODE_WIDTH, nodeHeight: NODE_HEIGHT } = GroupFolding.GEOMETRY;
  const groupId = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop());
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";

  // ---- where updates come from ------------------------------------------------------------
  // The one source of updates: every snapshot of the group reaches `onSnapshot` from here.
  // The first is listTaskGroup's (all pages). Then the group's events, from a feed of the
  // Function App (POST .../feed opens one; GET .../feed/<id>?wait=20 is a long poll, since an
  // Azure Functions HTTP answer is one body and cannot stream), are applied to the entries as
  // they come (GroupModel.applyEvent). The feed is opened before each listing, so nothing
  // that happens while the listing is read is missed. A re-list every RECONCILE_MS, and after
  // any feed error or expiry, corrects whatever events could not say. When the Function App
  // has no feed to offer (no event bus, or none reachable), it polls listTaskGroup instead,
  // more slowly for large groups, and asks for a feed again every FEED_RETRY_MS.
  const FEED = `/api/ui/data/task-group/${encodeURIComponent(groupId)}/feed`;
  const RECONCILE_MS = 60000;
  const FEED_RETRY_MS = 60000;
  const FEED_RENEW_MS = 15 * 60000;   // a feed is replaced now and then (see service_bus_feed.py)
  const MAX_FETCHES = 20;             // new tasks fetched one by one at most; more: list again
  const stats = { lists: 0, events: 0, mode: "starting" };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function watchGroup(onSnapshot, onError, { onMode = () => {}, onTasks = () => {} } = {}) {
    let stopped = false, entries = new Map(), listed = 0;
    const emit = () => onSnapshot({ tasks: [...entries.values()], at: new Date() });
    const setMode = (mode, why) => { stats.mode = mode; onMode(mode, why); };

    async function relist() {
      const started = performance.now();
      try {
        stats.lists += 1;
        entries = GroupModel.reconcile(entries, await listTaskGroup(groupId));
        listed = Date.now();
        emit();
      } catch (error) {
        onError(error);
      }
      return performance.now() - started;
    }

    async function openFeed() {
      try {
        const feed = await getJson(FEED, { method: "POST" });
        return feed.live ? feed : { live: false, reason: feed.reason };
      } catch (error) {
        return { live: false, reason: `${error.code || error.message}` };
      }
    }

    // Reads the feed until it fails, expires or is due for renewal.
    async function follow(feedId) {
      const opened = Date.now();
      while (!stopped && Date.now() - opened < FEED_RENEW_MS) {
        if (Date.now() - listed > RECONCILE_MS) await relist();
        let answer;
        try {
          answer = await getJson(`${FEED}/${encodeURIComponent(feedId)}?wait=20`);
        } catch (error) {
          if (error.status !== 404) await sleep(2000);   // a feed that expired is replaced at once
          return;
        }
        await apply(answer.events || []);
      }
    }

    async function apply(events) {
      const touched = new Set(), unknown = new Map();
      let changed = false;
      for (const event of events) {
        stats.events += 1;
        const result = GroupModel.applyEvent(entries, event);
        if (result.unknown) unknown.set(result.unknown, event.payload.status);
        changed = changed || result.changed;
        if (event.payload.status) touched.add(event.payload.status.taskId);
      }
      // Tasks new to the page need their definitions to be drawn: a few are fetched, many (a
      // graph being created) are read faster by listing the group again.
      if (unknown.size > MAX_FETCHES) {
        await relist();
      } else if (unknown.size) {
        await Promise.all([...unknown].map(async ([taskId, status]) => {
          try {
            const task = await getJson(`${QUEUE}/task/${encodeURIComponent(taskId)}`);
            if (!entries.has(taskId)) entries.set(taskId, { task, status });
            changed = true;
          } catch (error) { /* the next re-list brings it */ }
        }));
      }
      if (changed) emit();
      if (touched.size) onTasks(touched);
    }

    async function run() {
      while (!stopped) {
        try {
          await round();
        } catch (error) {   // a bug of ours, or an answer of an unexpected shape: keep watching
          onError(error);
          await sleep(2000);
        }
      }
    }

    // One feed followed until it ends, or one minute of polling.
    async function round() {
      const feed = await openFeed();
      const took = await relist();
      if (feed.live) {
        setMode("live");
        await follow(feed.feedId);
        return;
      }
      setMode("polling", feed.reason);
      const until = Date.now() + FEED_RETRY_MS;
      for (let pause = Math.max(1000, 3 * took); !stopped && Date.now() < until; pause = Math.max(1000, 3 * await relist())) {
        await sleep(pause);
      }
    }
    run();
    return () => { stopped = true; };
  }

  async function listTaskGroup(id) {
    const tasks = [];
    let token = null;
    do {
      const query = new URLSearchParams({ limit: "1000", ...(token ? { continuationToken: token } : {}) });
      const page = await getJson(`${QUEUE}/task-group/${encodeURIComponent(id)}/list?${query}`);
      tasks.push(...page.tasks);
      token = page.continuationToken;
    } while (token);
    return tasks;
  }

  // ---- drawing ----------------------------------------------------------------------------
  // What is drawn is folded to what fits the canvas at a readable size (GroupFolding.arrange).
  // A snapshot of the same shape only restyles what is drawn: nothing moves; a new shape, or
  // a resized window, arranges it anew.
  const view = { model: null, graph: null, key: null, transform: { x: 0, y: 0, k: 1 }, selected: null };

  function render(snapshot) {
    const model = GroupModel.buildModel(snapshot.tasks);
    view.model = model;
    view.snapshot = snapshot;
    const same = view.key && GroupFolding.displayGraph(model, view.limits, { grid: view.grid });
    if (same && GroupFolding.structureKey(same) === view.key) {
      for (const node of same.nodes.values()) Object.assign(node, { x: view.graph.nodes.get(node.id).x, y: view.graph.nodes.get(node.id).y });
      Object.assign(same, { paths: view.graph.paths, size: view.graph.size });
      view.graph = same;
      restyle(same);
    } else {
      const box = $("graph").getBoundingClientRect();
      const graph = GroupFolding.arrange(model, box, dagre);
      Object.assign(view, { graph, key: GroupFolding.structureKey(graph), grid: !!graph.grid,
                            limits: GroupFolding.limitsFor(box.width, box.height) });
      draw(graph);
      if (!view.fitted) { fit(); view.fitted = true; }
    }
    summarize(model, view.graph, snapshot);
    document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
  }

  // A resized window may hold more, or less: fold and fit again.
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { if (view.snapshot) { view.key = null; view.fitted = false; render(view.snapshot); } }, 200);
  });

  function element(name, attributes, parent) {
    const made = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) made.setAttribute(key, value);
    if (parent) parent.appendChild(made);
    return made;
  }

  function draw(graph) {
    const edges = $("edges"), nodes = $("nodes");
    edges.replaceChildren();
    nodes.replaceChildren();
    for (const path of graph.paths) {
      const d = path.points.map((point, index) => `${index ? "L" : "M"}${point.x.toFixed(1)},${point.y.toFixed(1)}`).join(" ");
      const flat = graph.grid && graph.nodes.get(path.from).column === graph.nodes.get(path.to).column;
      element("path", { class: "edge", d, "data-from": path.from, "data-to": path.to, "marker-end": "url(#arrow)",
                        ...(flat ? { "data-flat": "" } : {}) }, edges);
    }
    for (const node of graph.nodes.values()) {
      const g = element("g", { transform: `translate(${node.x - NODE_WIDTH / 2},${node.y - NODE_HEIGHT / 2})`, "data-id": node.id }, nodes);
      if (node.kind === "task") g.dataset.taskId = node.id;
      element("rect", { class: "body", width: NODE_WIDTH, height: NODE_HEIGHT }, g);
      if (node.kind !== "task") element("g", { class: "segments" }, g);
      element("text", { class: "label", x: 8, y: 16 }, g).textContent = clip(node.label, 24);
      element("text", { class: "sub", x: 8, y: 31 }, g);
      element("title", {}, g);
      g.addEventListener("click", (event) => { event.stopPropagation(); select(node.id); });
    }
    restyle(graph);
  }

  function clip(text, length) { return text.length > length ? text.slice(0, length - 1) + "…" : text; }

  // States, blockage and counts onto the drawn nodes and edges.
  function restyle(graph) {
    for (const g of $("nodes").children) {
      const node = graph.nodes.get(g.dataset.id);
      const classes = ["node", `state-${node.state}`, node.kind === "task" ? "task" : "aggregate"];
      if (node.blocker) classes.push("blocker");
      if (node.unreachable) classes.push("unreachable");
      if (view.selected === node.id) classes.push("selected");
      g.setAttribute("class", classes.join(" "));
      g.dataset.state = node.state;
      const total = node.members.length;
      const sub = node.kind === "task" ? node.state + (node.blocker ? " · blocks the graph" : node.unreachable ? "  (cannot run)" : "")
        : GroupModel.STATES.filter((state) => node.counts[state]).map((state) => `${state[0].toUpperCase()}${node.counts[state]}`).join(" ");
      g.querySelector(".sub").textContent = sub;
      g.querySelector(".sub").setAttribute("class", node.blocker && node.kind === "task" ? "sub blocker-tag" : "sub");
      g.querySelector("title").textContent = `${[node.label, node.detail].filter(Boolean).join(" · ")}\n${total} task(s): ` +
        GroupModel.STATES.filter((state) => node.counts[state]).map((state) => `${state} ${node.counts[state]}`).join(", ");
      if (node.kind !== "task") drawSegments(g.querySelector(".segments"), node);
    }
    for (const path of $("edges").children) {
      const to = graph.nodes.get(path.dataset.to);
      path.setAttribute("class", to && to.unreachable ? "edge unreachable" : "edge");
    }
  }

  // An aggregate's states as a stacked bar along its bottom.
  function drawSegments(container, node) {
    container.replaceChildren();
    let x = 0;
    for (const state of GroupModel.STATES) {
      const width = NODE_WIDTH * node.counts[state] / node.members.length;
      if (!width) continue;
      element("rect", { class: `segment state-${state}`, x, y: NODE_HEIGHT - 7, width, height: 7 }, container);
      x += width;
    }
  }

  function summarize(model, graph, snapshot) {
    const total = model.tasks.size;
    $("bar").replaceChildren(...GroupModel.STATES.filter((state) => model.counts[state]).map((state) => {
      const part = document.createElement("div");
      part.style.cssText = `width:${100 * model.counts[state] / total}%;background:var(--${state})`;
      part.title = `${state} ${model.counts[state]}`;
      return part;
    }));
    $("counts").replaceChildren(...GroupModel.STATES.filter((state) => model.counts[state]).map((state) => {
      const item = document.createElement("span");
      item.dataset.state = state;
      item.innerHTML = `<span class="dot" style="background:var(--${state})"></span>`;
      item.append(`${state} ${model.counts[state].toLocaleString("en")}`);
      return item;
    }));
    const blocked = model.blockers.size ? ` · blocked by ${model.blockers.size} task(s), ${model.unreachable.size} cannot run` : "";
    $("status-line").textContent = `${total.toLocaleString("en")} tasks${blocked} · updated ${snapshot.at.toLocaleTimeString()}`;
    $("notice").textContent = graph.nodes.size < total
      ? `${total.toLocaleString("en")} tasks drawn as ${graph.nodes.size} nodes, to fit the window: ` +
        (graph.grid ? "each column holds a band of depths, each node a part of one" : "tasks alike are folded together") +
        "; click one to list its tasks"
      : "";
    if (view.selected && graph.nodes.has(view.selected) && graph.nodes.get(view.selected).kind !== "task") {
      TaskDetails.showMembers($("details"), graph.nodes.get(view.selected), model);
    }
  }

  // ---- pan and zoom -----------------------------------------------------------------------
  function applyTransform() {
    const { x, y, k } = view.transform;
    $("viewport").setAttribute("transform", `translate(${x},${y}) scale(${k})`);
  }

  function fit() {
    const box = $("graph").getBoundingClientRect();
    const size = view.graph.size;
    const k = GroupFolding.fitScale(size, box.width, box.height);
    view.transform = { k, x: (box.width - size.width * k) / 2, y: (box.height - size.height * k) / 2 };
    applyTransform();
  }

  function zoom(factor, cx, cy) {
    const t = view.transform;
    const k = Math.min(4, Math.max(0.02, t.k * factor));
    view.transform = { k, x: cx - (cx - t.x) * k / t.k, y: cy - (cy - t.y) * k / t.k };
    applyTransform();
  }

  function enablePanAndZoom() {
    const svg = $("graph");
    svg.addEventListener("wheel", (event) => {
      event.preventDefault();
      const box = svg.getBoundingClientRect();
      zoom(event.deltaY < 0 ? 1.15 : 1 / 1.15, event.clientX - box.left, event.clientY - box.top);
    }, { passive: false });
    let drag = null;
    svg.addEventListener("mousedown", (event) => { drag = { x: event.clientX, y: event.clientY, t: { ...view.transform } }; svg.classList.add("dragging"); });
    window.addEventListener("mousemove", (event) => {
      if (!drag) return;
      view.transform = { ...drag.t, x: drag.t.x + event.clientX - drag.x, y: drag.t.y + event.clientY - drag.y };
      applyTransform();
    });
    window.addEventListener("mouseup", () => { drag = null; svg.classList.remove("dragging"); });
    $("fit").addEventListener("click", fit);
    const centre = () => { const box = svg.getBoundingClientRect(); return [box.width / 2, box.height / 2]; };
    $("zoom-in").addEventListener("click", () => zoom(1.3, ...centre()));
    $("zoom-out").addEventListener("click", () => zoom(1 / 1.3, ...centre()));
  }

  // ---- details ----------------------------------------------------------------------------
  function select(id) {
    view.selected = id;
    restyle(view.graph);
    const node = view.graph.nodes.get(id);
    if (node.kind === "task") TaskDetails.showTask($("details"), id);
    else TaskDetails.showMembers($("details"), node, view.model);
  }

  // ---- start ------------------------------------------------------------------------------
  // How updates arrive, in the header: "live" (events) or "polling" (and why).
  function showMode(mode, why) {
    const badge = $("mode");
    badge.dataset.mode = mode;
    badge.textContent = mode === "live" ? "live" : "polling";
    badge.title = mode === "live" ? "updated by the group's events as they happen"
      : `re-read every few seconds (no event feed: ${why || "unavailable"})`;
  }

  // An event about the task whose details are open: show them anew (new runs, artifacts).
  function refreshDetails(taskIds) {
    if (view.selected && taskIds.has(view.selected) && view.graph && view.graph.nodes.get(view.selected)
        && view.graph.nodes.get(view.selected).kind === "task") TaskDetails.showTask($("details"), view.selected);
  }

  window.taskGroupView = { render, watchGroup, stats, scale: () => view.transform.k };
  $("group-id").textContent = groupId;
  document.title = `Task group ${groupId}`;
  enablePanAndZoom();
  $("graph").addEventListener("click", () => { view.selected = null; if (view.graph) restyle(view.graph); });
  if (!new URLSearchParams(location.search).has("static")) {
    watchGroup(render, (error) => { $("status-line").textContent = `cannot read the group: ${error.code || ""} ${error.message}`; },
               { onMode: showMode, onTasks: refreshDetails });
  }
})();
