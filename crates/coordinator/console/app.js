// The Oxydra web console: runs (live), a run's transcript (Server-Sent Events read
// with fetch, so the bearer token goes in a header), approvals with what they will do,
// decisions, cancelling, a run's changes with a Revert button, and starting a run from
// a blueprint's form. No inline script, no HTML built from data: every value from the server is set as text.
"use strict";

const TOKEN_KEY = "oxydra-token";
const $ = (id) => document.getElementById(id);

let selected = null;       // the run id shown
let stream = null;         // the AbortController of its event stream
let agents = [];

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// A `#login=CODE` in the address (the URL `oxydra serve` prints) is removed from the
// address bar at once, then traded for the token by `POST /console/login`: the code
// works once, so a copy of the URL left in the history is worth nothing.
const loginCode = (function takeLoginCode() {
  const match = /^#login=([0-9A-Za-z_-]{1,256})$/.exec(location.hash);
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  return match ? match[1] : null;
})();

async function redeemLoginCode() {
  if (!loginCode) return;
  const response = await fetch("/console/login", {
    method: "POST", credentials: "omit", cache: "no-store",
    headers: { "Accept": "application/json", "Content-Type": "application/json" },
    body: JSON.stringify({ code: loginCode }),
  });
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (response.ok && body && typeof body.token === "string") {
    sessionStorage.setItem(TOKEN_KEY, body.token);
  } else {
    $("login-error").textContent = (body && body.message) || ("login failed: HTTP " + response.status);
  }
}

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (key === "data") for (const [name, v] of Object.entries(value)) node.dataset[name] = v;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || ("HTTP " + status));
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = null; }
  if (response.status === 401) { showLogin(); throw new ApiError(401, parsed); }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

function showLogin() {
  $("login").hidden = false;
  $("app").hidden = true;
  $("connection").textContent = "token needed";
}

function showApp() {
  $("login").hidden = true;
  $("app").hidden = false;
}

function age(ms) {
  const secs = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (secs < 60) return secs + " s ago";
  if (secs < 3600) return Math.round(secs / 60) + " min ago";
  if (secs < 86400) return Math.round(secs / 3600) + " h ago";
  return Math.round(secs / 86400) + " d ago";
}

// ---- runs ----------------------------------------------------------------------

// One page: the newest 50 runs (of the status chosen), however many the server holds.
async function refreshRuns() {
  const status = $("status-filter").value;
  const page = await api("GET", "/runs?limit=50" + (status ? "&status=" + encodeURIComponent(status) : ""));
  const list = $("runs");
  list.replaceChildren(...page.runs.map((run) => el("li", {
    data: { runId: run.run_id, status: run.status },
    class: run.run_id === selected ? "selected" : "",
    on: { click: () => select(run.run_id) },
  },
  el("span", { class: "status status-" + run.status, text: run.status }),
  el("span", { text: run.agent_name }),
  el("span", { class: "id", text: run.run_id }),
  el("span", { class: "muted", text: age(run.created_at) }))));
}

function showRun(run) {
  $("run-id").textContent = run.run_id;
  const status = $("run-status");
  status.textContent = run.status;
  status.className = "status status-" + run.status;
  $("run-agent").textContent = run.agent_name;
  const usage = run.usage || {};
  $("run-usage").textContent = "turns " + (usage.turns || 0) + " · tokens " +
    ((usage.input_tokens || 0) + (usage.output_tokens || 0)) + " · $" + (usage.cost || 0).toFixed(4);
  $("cancel").hidden = ["completed", "failed", "cancelled"].includes(run.status);
  const result = $("run-result");
  if (run.result && typeof run.result.text === "string") result.textContent = run.result.text;
  else if (run.error) result.textContent = run.error.kind + ": " + run.error.message;
  else result.textContent = "";
  result.className = run.error ? "error" : "";
  for (const li of $("runs").children) {
    if (li.dataset.runId === run.run_id) {
      li.dataset.status = run.status;
      li.firstChild.textContent = run.status;
      li.firstChild.className = "status status-" + run.status;
    }
  }
}

function showMessage(item) {
  const message = item.message || {};
  const li = el("li", { data: { sequence: item.sequence } },
    el("span", { class: "role", text: message.role || "?" }));
  if (message.content) li.append(el("span", { text: message.content }));
  for (const call of message.tool_calls || []) {
    li.append(el("div", { class: "tool", text: "→ " + call.name + " " + JSON.stringify(call.arguments) }));
  }
  if (message.tool_call_id) li.prepend(el("div", { class: "tool", text: "result of " + message.tool_call_id }));
  $("transcript").append(li);
}

async function select(runId) {
  if (stream) stream.abort();
  selected = runId;
  $("transcript").replaceChildren();
  $("changes").replaceChildren();
  $("revert-result").textContent = "";
  $("revert-conflicts").replaceChildren();
  for (const li of $("runs").children) li.classList.toggle("selected", li.dataset.runId === runId);
  const controller = new AbortController();
  stream = controller;
  try {
    await followEvents(runId, controller.signal);
  } catch (error) {
    if (error.name !== "AbortError") $("run-result").textContent = String(error.message || error);
  }
}

// Reads `GET /runs/{id}/events` as it comes: `run`, `message`, `end`.
async function followEvents(runId, signal) {
  const headers = { "Accept": "text/event-stream" };
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const response = await fetch("/runs/" + encodeURIComponent(runId) + "/events",
    { headers, signal, credentials: "omit", cache: "no-store" });
  if (!response.ok) throw new ApiError(response.status, null);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let kind = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (!data || selected !== runId) continue;
      const parsed = JSON.parse(data);
      if (kind === "message") showMessage(parsed);
      else if (kind === "run" || kind === "end") {
        showRun(parsed);
        showChanges(runId, parsed.status).catch(() => {});
      }
    }
  }
}

// ---- changes ---------------------------------------------------------------------

// `GET /runs/{id}/changes`: per turn, each path with its kind and diff; a Revert button
// once the run has ended (`POST /runs/{id}/revert`).
async function showChanges(runId, status) {
  const box = $("changes");
  let changes;
  try {
    changes = await api("GET", "/runs/" + encodeURIComponent(runId) + "/changes");
  } catch (error) {
    if (selected !== runId) return;
    box.replaceChildren(el("p", { class: "muted", text: error.message }));
    $("changes-empty").hidden = true;
    $("revert").hidden = true;
    $("revert-force-label").hidden = true;
    return;
  }
  if (selected !== runId) return;
  const turns = changes.turns || [];
  box.replaceChildren(...turns.map((turn) => {
    const section = el("div", { class: "turn" },
      el("h3", { text: "Turn " + turn.turn + (turn.undone ? " (reverted)" : "") }));
    for (const path of turn.paths) {
      const counts = path.lines_added !== undefined ? " +" + path.lines_added + " -" + path.lines_removed : "";
      section.append(el("div", { class: "path" },
        el("span", { class: "kind kind-" + path.kind, text: path.kind }),
        el("code", { text: path.path }),
        el("span", { class: "muted", text: counts })));
      if (path.diff) section.append(diffBlock(path.diff));
    }
    for (const missing of turn.not_captured) {
      section.append(el("div", { class: "muted", text: "not kept: " + missing.path + (missing.reason ? " (" + missing.reason + ")" : "") }));
    }
    for (const tool of turn.irreversible) {
      section.append(el("div", { class: "error", text: "cannot be reverted: a " + tool + " call" }));
    }
    return section;
  }));
  $("changes-empty").hidden = turns.length > 0;
  const ended = ["completed", "failed", "cancelled"].includes(status);
  const revertible = ended && turns.some((turn) => !turn.undone);
  $("revert").hidden = !revertible;
  $("revert-force-label").hidden = !revertible;
}

async function revertSelected() {
  const runId = selected;
  if (!runId) return;
  $("revert-result").textContent = "";
  $("revert-conflicts").replaceChildren();
  try {
    const done = await api("POST", "/runs/" + encodeURIComponent(runId) + "/revert",
      { force: $("revert-force").checked });
    const lines = ["put back " + done.restored.length + " path(s)"];
    for (const missing of done.not_captured) lines.push("not put back: " + missing.path);
    for (const call of done.irreversible) lines.push("cannot be reverted: " + call);
    $("revert-result").textContent = lines.join("; ");
  } catch (error) {
    $("revert-result").textContent = error.message;
    const conflicts = (error.body && error.body.conflicts) || [];
    $("revert-conflicts").replaceChildren(...conflicts.map((conflict) => el("div", {},
      el("code", { text: conflict.path }),
      conflict.diff ? diffBlock(conflict.diff) : el("span", { class: "muted", text: " (not a text file)" }))));
  }
  $("revert-force").checked = false;
  const run = await api("GET", "/runs/" + encodeURIComponent(runId));
  await showChanges(runId, run.status);
}

// ---- approvals -----------------------------------------------------------------

function diffBlock(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    let cls = "";
    if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", { class: cls, text: line + "\n" }));
  }
  return pre;
}

function whatWillHappen(approval) {
  const preview = approval.preview || {};
  switch (preview.kind) {
    case "command": return el("div", {}, el("span", { text: "Runs the command:" }), el("pre", { class: "command", text: preview.command }));
    case "url": return el("div", {}, el("span", { text: "Fetches " }), el("code", { class: "url", text: preview.url }));
    case "diff": return el("div", {}, el("span", { text: (preview.exists ? "Changes " : "Creates ") + preview.path + ":" }), diffBlock(preview.diff));
    default: return el("div", {}, el("span", { text: "Arguments:" }), el("pre", { text: approval.arguments }));
  }
}

async function decide(approval, decision, reason) {
  const body = { decision };
  if (decision === "deny" && reason) body.reason = reason;
  await api("POST", "/runs/" + encodeURIComponent(approval.run_id) + "/approvals/" +
    encodeURIComponent(approval.approval_id), body);
  await refreshApprovals();
  await refreshRuns();
  if (selected !== approval.run_id) select(approval.run_id);
}

function approvalItem(approval) {
  const reason = el("input", { class: "reason", placeholder: "reason (for deny)", "aria-label": "reason" });
  const error = el("span", { class: "error" });
  const act = (decision) => async () => {
    try { await decide(approval, decision, reason.value.trim()); }
    catch (e) { error.textContent = e.message; }
  };
  return el("li", { data: { approvalId: approval.approval_id, runId: approval.run_id } },
    el("div", {},
      el("strong", { text: approval.tool }), " in ",
      el("a", { href: "#", class: "run-link", text: approval.run_id,
        on: { click: (event) => { event.preventDefault(); select(approval.run_id); } } }),
      el("span", { class: "muted", text: " (" + approval.agent_name + ", asked " + age(approval.requested_at) + ")" })),
    approval.reason ? el("div", { class: "why", text: "Why you are asked: " + approval.reason }) : null,
    whatWillHappen(approval),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "primary approve-once", text: "Approve once", on: { click: act("approve_once") } }),
      el("button", { type: "button", class: "approve-session", text: "Approve for the session", on: { click: act("approve_for_session") } }),
      reason,
      el("button", { type: "button", class: "danger deny", text: "Deny", on: { click: act("deny") } }),
      error));
}

async function refreshApprovals() {
  const listed = await api("GET", "/approvals");
  const approvals = listed.approvals || [];
  $("approvals-count").textContent = String(approvals.length);
  $("approvals-empty").hidden = approvals.length > 0;
  // Keep the items being typed into; add new ones, drop decided ones.
  const list = $("approvals");
  const present = new Map([...list.children].map((li) => [li.dataset.approvalId, li]));
  const wanted = new Set(approvals.map((a) => a.approval_id));
  for (const [id, li] of present) if (!wanted.has(id)) li.remove();
  for (const approval of approvals) {
    if (!present.has(approval.approval_id)) list.append(approvalItem(approval));
  }
}

// ---- starting a run --------------------------------------------------------------

function fieldFor(name, schema, required) {
  const label = el("label", { data: { field: name } }, el("span", { text: name + (required ? " *" : "") + " " }));
  let input;
  if (Array.isArray(schema.enum)) {
    input = el("select", {}, ...schema.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v) })));
    input.dataset.kind = "enum";
  } else if (schema.type === "boolean") {
    input = el("input", { type: "checkbox" });
    input.dataset.kind = "boolean";
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input", { type: "number", step: schema.type === "integer" ? "1" : "any" });
    input.dataset.kind = "number";
  } else if (schema.type === "object" || schema.type === "array") {
    input = el("textarea", { placeholder: "JSON" });
    input.dataset.kind = "json";
  } else {
    input = el(name === "prompt" ? "textarea" : "input", name === "prompt" ? {} : { type: "text" });
    input.dataset.kind = "string";
  }
  input.name = name;
  if (schema.description) label.append(el("span", { class: "muted", text: " " + schema.description }));
  label.append(input, el("span", { class: "field-error" }));
  return label;
}

function showForm() {
  const agent = agents.find((a) => a.name === $("agent").value);
  const fields = $("fields");
  fields.replaceChildren();
  $("start-error").textContent = "";
  if (!agent) return;
  $("agent-description").textContent = agent.description || "";
  const schema = agent.parameters_schema || { type: "object", required: ["prompt"],
    properties: { prompt: { type: "string", description: "what the agent should do" } } };
  const required = new Set(schema.required || []);
  for (const [name, property] of Object.entries(schema.properties || {})) {
    fields.append(fieldFor(name, property || {}, required.has(name)));
  }
}

function formParameters() {
  const parameters = {};
  for (const input of $("fields").querySelectorAll("[name]")) {
    const kind = input.dataset.kind;
    if (kind === "boolean") { parameters[input.name] = input.checked; continue; }
    if (input.value === "") continue;
    if (kind === "number") parameters[input.name] = Number(input.value);
    else if (kind === "enum") parameters[input.name] = JSON.parse(input.value);
    else if (kind === "json") {
      try { parameters[input.name] = JSON.parse(input.value); }
      catch (_) { parameters[input.name] = input.value; }
    } else parameters[input.name] = input.value;
  }
  return parameters;
}

async function startRun(event) {
  event.preventDefault();
  for (const span of $("fields").querySelectorAll(".field-error")) span.textContent = "";
  $("start-error").textContent = "";
  try {
    const created = await api("POST", "/runs", { agent_name: $("agent").value, parameters: formParameters() });
    await refreshRuns();
    select(created.run_id);
  } catch (error) {
    const body = error.body || {};
    $("start-error").textContent = body.message || error.message;
    for (const issue of body.validation_errors || []) {
      const match = /^\$\.([A-Za-z0-9_]+)|^\$\['([^']+)'\]/.exec(issue.path || "");
      const name = match ? (match[1] || match[2]) : null;
      const label = name && $("fields").querySelector('label[data-field="' + CSS.escape(name) + '"]');
      const target = label ? label.querySelector(".field-error") : $("start-error");
      target.textContent = (target.textContent ? target.textContent + "; " : "") + issue.message;
    }
  }
}

// ---- start -------------------------------------------------------------------------

async function tick() {
  try {
    await Promise.all([refreshApprovals(), refreshRuns()]);
    $("connection").textContent = "live";
    showApp();
  } catch (error) {
    if (error.status !== 401) $("connection").textContent = "cannot reach the server: " + error.message;
  }
}

function wire() {
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    $("token").value = "";
    $("login-error").textContent = "";
    load();
  });
  $("status-filter").addEventListener("change", () => refreshRuns().catch(() => {}));
  $("cancel").addEventListener("click", async () => {
    if (!selected) return;
    try { showRun(await api("DELETE", "/runs/" + encodeURIComponent(selected))); }
    catch (error) { $("run-result").textContent = error.message; }
  });
  $("revert").addEventListener("click", () => revertSelected().catch((error) => {
    $("revert-result").textContent = error.message;
  }));
  $("agent").addEventListener("change", showForm);
  $("start-form").addEventListener("submit", startRun);
  redeemLoginCode()
    .catch((error) => { $("login-error").textContent = "login failed: " + error.message; })
    .then(load);
}

async function load() {
  try {
    agents = (await api("GET", "/agents")).agents || [];
  } catch (error) {
    if (error.status === 401) return;
    $("connection").textContent = "cannot reach the server: " + error.message;
    return;
  }
  $("agent").replaceChildren(...agents.map((a) => el("option", { value: a.name, text: a.name + " (" + a.type + ")" })));
  showForm();
  showApp();
  await tick();
  if (!load.timer) load.timer = setInterval(tick, 1500);
}

document.addEventListener("DOMContentLoaded", wire);
