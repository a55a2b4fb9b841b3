// The details pane of the task-group page: a task (its summary, runs, its last run's log and
// artifacts, its definition) or a folded node's tasks; and reading the Queue API as JSON.
(function (exports) {
  "use strict";

  const QUEUE = "/api/queue/v1";

  async function getJson(url, options = {}) {
    const response = await fetch(url, { cache: "no-store", ...options });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw Object.assign(new Error(body.message || response.statusText), { status: response.status, code: body.code });
    return body;
  }

  function section(title, content) {
    const h3 = document.createElement("h3");
    h3.textContent = title;
    return [h3, content];
  }

  function pre(text) { const block = document.createElement("pre"); block.textContent = text; return block; }

  // A folded node's tasks; clicking one shows it.
  function showMembers(panel, node, model) {
    const table = document.createElement("table");
    table.innerHTML = "<tr><th>task</th><th>state</th></tr>";
    // What needs attention first (a folded node's failures at the top of its list), then by name.
    for (const id of GroupFolding.memberOrder(model, node.members).slice(0, 500)) {
      const task = model.tasks.get(id);
      const row = table.insertRow();
      row.className = "member";
      row.insertCell().textContent = task.name;
      row.insertCell().innerHTML = `<span class="dot" style="background:var(--${task.state})"></span>${task.state}`;
      row.addEventListener("click", () => showTask(panel, id));
    }
    const heading = document.createElement("h2");
    heading.textContent = `${node.label}`;
    const more = node.members.length > 500 ? [pre(`… and ${node.members.length - 500} more`)] : [];
    panel.replaceChildren(heading, ...section(`${node.members.length} tasks`, table), ...more);
  }

  // A task's summary, runs, its last run's log and artifacts, and its definition.
  async function showTask(panel, taskId) {
    panel.replaceChildren(pre("loading…"));
    try {
      const [task, { status }] = await Promise.all([getJson(`${QUEUE}/task/${taskId}`), getJson(`${QUEUE}/task/${taskId}/status`)]);
      const heading = document.createElement("h2");
      heading.textContent = task.metadata.name;
      const id = pre(`taskId ${taskId}\nstate  ${status.state}\nqueue  ${status.taskQueueId}`);
      id.id = "task-summary";
      const runs = pre(status.runs.map((run) => `run ${run.runId}: ${run.state} (${run.reasonCreated}` +
        `${run.reasonResolved ? " → " + run.reasonResolved : ""})${run.workerId ? " on " + run.workerGroup + "/" + run.workerId : ""}`).join("\n") || "no runs yet");
      const definition = pre(JSON.stringify(task, null, 2));
      definition.id = "task-definition";
      const files = document.createElement("div");   // the last run's log and artifacts, before the definition
      panel.replaceChildren(heading, id, ...section("runs", runs), files, ...section("definition", definition));
      if (status.runs.length) await showRunFiles(files, taskId, status.runs[status.runs.length - 1]);
    } catch (error) {
      panel.replaceChildren(pre(`cannot read task ${taskId}: ${error.code || ""} ${error.message}`));
    }
  }

  async function showRunFiles(panel, taskId, run) {
    const runId = run.runId;
    const artifactsBlock = document.createElement("div");
    const logBlock = pre("…");
    logBlock.id = "run-log";
    panel.append(...section(`log of run ${runId}`, logBlock), ...section(`artifacts of run ${runId}`, artifactsBlock));
    try {
      const { artifacts } = await getJson(`${QUEUE}/task/${taskId}/runs/${runId}/artifacts`);
      for (const artifact of artifacts) {
        const link = document.createElement("a");
        link.href = `${QUEUE}/task/${taskId}/runs/${runId}/artifacts/${encodeURIComponent(artifact.name)}`;
        link.textContent = `${artifact.name} (${artifact.storageType})`;
        artifactsBlock.append(link, document.createElement("br"));
      }
      if (!artifacts.length) artifactsBlock.textContent = "none";
    } catch (error) {
      artifactsBlock.textContent = `none (${error.code || error.message})`;
    }
    const logUrl = `${QUEUE}/task/${taskId}/runs/${runId}/artifacts/${encodeURIComponent("public/logs/live.log")}`;
    if (run.state === "running") {  // the live log streams until the run ends: link to it instead
      const link = document.createElement("a");
      link.href = logUrl;
      link.target = "_blank";
      link.textContent = "open the live log (it grows while the run goes on)";
      logBlock.replaceChildren(link);
      return;
    }
    // live.log, or where a worker did not replace it (it stopped first; a cancelled run's upload
    // was refused) and it still names the worker's server, the complete log beside it.
    const failures = [];
    for (const name of ["public/logs/live.log", "public/logs/live_backing.log"]) {
      try {
        const response = await fetch(`${QUEUE}/task/${taskId}/runs/${runId}/artifacts/${encodeURIComponent(name)}`);
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        const text = await response.text();
        logBlock.textContent = text.split("\n").slice(-200).join("\n");
        return;
      } catch (error) {
        failures.push(`${name.split("/").pop()}: ${error.message}`);
      }
    }
    logBlock.textContent = `no log to show (${failures.join("; ")})`;
  }

  Object.assign(exports, { QUEUE, getJson, showTask, showMembers });
})(window.TaskDetails = {});
