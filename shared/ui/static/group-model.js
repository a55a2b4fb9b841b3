// What a task group is, as a graph: its tasks, the edges between them, what blocks it and
// what can no longer run; and how events keep a group's entries current. (What is drawn of
// it, folded to fit, is group-folding.js.) Plain functions without the DOM, so Node can test
// them too.
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

  Object.assign(exports, { STATES, buildModel, countStates, isNewer, applyEvent, reconcile });
})(typeof module !== "undefined" ? module.exports : (window.GroupModel = {}));
