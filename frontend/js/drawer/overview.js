// The Overview: the answer first. Opening a Spark application (#/s/ID with no scope, batch or port) shows, over the
// graph, what GET .../overview says: the application's duration, jobs and idle cores, the what-if for twice and half
// the cores (and a chart of GET .../cores-whatif), the slowest times with the holder that held each longest, and the
// findings with what to change. Each row opens its moment (a time's top blame segment, a finding where the Findings
// tab opens it); "Show the graph" closes it, as does any moment opened elsewhere (the view at a batch in the past),
// and the graph tools' "overview" brings it back; while the session loads or runs live, it follows it. Nothing is
// computed here: the server's answers, put into words.

import * as api from "../api.js";
import { $, esc } from "../dom.js";
import { parseHash } from "../navigation/address.js";
import { segmentLabel } from "./blame.js";
import { loadPlotly } from "./plotly.js";
import { S } from "../state.js";
import { bindGroups, impactWords } from "./findings.js";

const TOP_GROUPS = 10; // groups of findings listed (as flowscope report lists them)

let handlers = null; // { openFinding(f), openSegment(t, seg), goto(scope, batch, port) } from page.js
let shownFor = null; // the session whose Overview was shown on opening (once: closing it keeps it closed)
let answer = null; // { sid, overview }

function seconds(s) {
  if (typeof s !== "number") return "?";
  return s >= 100 ? `${s.toFixed(0)} s` : s >= 10 ? `${s.toFixed(1)} s` : `${s.toFixed(2)} s`;
}

function pct(p) {
  return typeof p === "number" ? `${p > 0 ? "+" : ""}${p.toFixed(0)}%` : "";
}

function cores(n) {
  return `${n} core${n === 1 ? "" : "s"}`;
}

function timeName(t) {
  let what = t.batch_id !== null && t.batch_id !== undefined ? `batch ${t.batch_id}` : `time ${JSON.stringify(t.time)}`;
  if (t.job_ids && t.job_ids.length) what += ` · job${t.job_ids.length > 1 ? "s" : ""} ${t.job_ids.slice(0, 3).join(", ")}${t.job_ids.length > 3 ? ", …" : ""}`;
  return what;
}

export function hideOverview() {
  const el = $("#overview");
  if (el) el.hidden = true;
}

async function fetchOverview(sid) {
  if (answer && answer.sid === sid) return answer.overview;
  const overview = await api.get(`/api/sessions/${sid}/overview`);
  answer = { sid, overview };
  return overview;
}

// Shown first when a Spark application is opened without a moment asked for; `force`: the "overview" button.
export async function showOverview(force = false) {
  const r = parseHash();
  if (!r) return;
  if (force) answer = null; // asked again: a live session's answer moves on
  let overview;
  try { overview = await fetchOverview(r.sid); } catch (e) { return; }
  const now = parseHash();
  if (!now || now.sid !== r.sid) return;
  $("#overview").dataset.sid = r.sid; // answered (shown or not): tests wait on it
  if (!force && (now.scope.length || now.batch !== null || now.port)) return;
  if (!force && overview.application.engine !== "spark") {
    // an application opened as it is being replayed (a followed directory's) has shown no Spark job yet: ask again
    let info = null;
    try { info = await api.get(`/api/sessions/${r.sid}`); } catch (e) { return; }
    answer = null;
    if (info.status === "loading") {
      setTimeout(() => { if (shownFor === r.sid && $("#overview").hidden) showOverview(false); }, 300);
      return;
    }
    // the replay may have ended between the two answers: the overview asked before it is asked once more
    try { overview = await fetchOverview(r.sid); } catch (e) { return; }
    const still = parseHash();
    if (!still || still.sid !== r.sid || overview.application.engine !== "spark") return;
  }
  render(overview);
  $("#overview").hidden = false;
  drawWhatif(r.sid, overview);
}

function render(o) {
  const a = o.application;
  const facts = [`<b>${seconds(a.duration_s)}</b>`, `${a.jobs} job${a.jobs === 1 ? "" : "s"}`,
    `${a.times} completed time${a.times === 1 ? "" : "s"}${a.failed_times ? ` (${a.failed_times} failed)` : ""}`];
  if (a.streaming_queries) facts.push(`${a.streaming_queries} streaming quer${a.streaming_queries === 1 ? "y" : "ies"}`);
  if (a.engine === "spark") {
    facts.push(`${a.tasks} tasks on ${a.recorded_cores ? cores(a.recorded_cores) : "unknown cores"}`);
    if (a.idle_cores_pct !== null && a.idle_cores_pct !== undefined) facts.push(`cores idle ${a.idle_cores_pct.toFixed(0)}% of the time`);
  }
  const w = a.whatif;
  const whatif = w ? `<div class="ov-whatif"><span class="ov-label">what if</span>
      ${cores(w["2x"].cores)}: <b>${seconds(w["2x"].wall_s)}</b> (${pct(w["2x"].change_pct)}) ·
      ${cores(w["0.5x"].cores)}: <b>${seconds(w["0.5x"].wall_s)}</b> (${pct(w["0.5x"].change_pct)}) ·
      never below ${seconds(w.critical_path_s)} (the critical path)
      <span class="muted" title="${esc(w.assumptions.join("\n"))}">· tasks as recorded, FIFO slots (hover: assumptions)</span></div>
      <div id="overview-whatif-chart" class="ov-chart"></div>` : "";
  const slow = o.slowest.map((t, i) => {
    const top = t.top;
    const held = top ? `<span class="ov-kind k-${esc(top.kind)}">${esc(top.kind)}</span> ${seconds(top.seconds)}
        (${(100 * top.seconds / (t.latency_s || 1)).toFixed(0)}%) ${esc(segmentLabel(top))}` : "";
    return `<tr class="clickable ov-slow" data-i="${i}" title="open the view where this holder held it">
      <td>${esc(timeName(t))}${t.status === "failed" ? ` <span class="pill failed">failed</span>` : ""}
        <div class="muted ov-name">scope [${t.scope.join(",")}] ${esc(t.name || "")}</div></td>
      <td class="num">${seconds(t.latency_s)}</td><td>${held}</td></tr>`;
  }).join("");
  const found = o.groups.slice(0, TOP_GROUPS).map((g, gi) => {
    const f = o.findings.find((x) => x.group === gi);
    return `<tr class="clickable ov-finding ${esc(g.kind)}" data-g="${gi}" title="open the moment its worst instance was found at">
      <td><span class="ov-kind">${esc(g.kind)}</span></td>
      <td><b>${esc(g.label)}</b>${g.count > 1 ? ` <span class="muted">· ${g.count} findings</span>` : ""}
        <div>${esc(f.text)}</div>${g.recommendation ? `<div class="ov-do">${esc(g.recommendation)}</div>` : ""}
        ${g.count > 1 ? `<button class="group-more" data-g="${gi}">the other ${g.count - 1}</button><div class="group-rest" hidden></div>` : ""}</td>
      <td class="num" title="${esc(f.impact_note || "")}">${esc(impactWords(g.impact_s))}</td></tr>`;
  }).join("");
  const rest = a.rest ? `<div class="ov-rest"><span class="ov-label">Spark's REST API</span>
      ${[["application", ""], ["jobs", "/jobs"], ["stages", "/stages"], ["executors", "/allexecutors"],
         ["SQL", "/sql"], ["environment", "/environment"]].map(([label, tail]) =>
        `<a class="ov-rest-link" href="${esc(a.rest + tail)}" target="_blank" rel="noopener">${label}</a>`).join(" · ")}</div>` : "";
  $("#overview").innerHTML = `<div class="ov-head"><h2>${esc(a.name)}</h2>
      <button id="overview-close" title="the dataflow graph, the timeline and the tabs">Show the graph ›</button></div>
    <div class="ov-facts">${facts.join(" · ")}</div>${rest}${whatif}
    <h3>Slowest</h3>${slow ? `<table class="ov-table"><tr><th>time</th><th>took</th><th>held longest by</th></tr>${slow}</table>` : `<p class="muted">No completed time yet.</p>`}
    <h3>Findings${o.findings_total ? ` <span class="muted" id="overview-findings-count" data-total="${o.findings_total}">${o.findings_total} in ${o.groups.length} group${o.groups.length === 1 ? "" : "s"}, largest impact first${o.groups.length > TOP_GROUPS ? ` (the first ${TOP_GROUPS})` : ""}</span>` : ""}</h3>
    ${found ? `<table class="ov-table"><tr><th>kind</th><th>what, and what to change</th><th>impact</th></tr>${found}</table>` : `<p class="muted">No findings.</p>`}`;
  $("#overview-close").addEventListener("click", hideOverview);
  for (const tr of $("#overview").querySelectorAll("tr.ov-slow")) {
    tr.addEventListener("click", () => {
      const t = o.slowest[+tr.dataset.i];
      hideOverview();
      if (t.top) handlers.openSegment(t, t.top);
    });
  }
  const open = (f) => {
    hideOverview();
    if (f.contract) handlers.goto(f.scope, f.batch, f.port ? f.port.join(",") : null);
    else handlers.openFinding(f);
  };
  for (const tr of $("#overview").querySelectorAll("tr.ov-finding")) {
    tr.addEventListener("click", (e) => {
      if (e.target.closest(".group-more, .group-rest")) return; // the others: listed, or one of them opened
      open(o.findings.find((f) => f.group === +tr.dataset.g));
    });
  }
  bindGroups($("#overview"), o, open);
}

// The application's estimated duration against the number of cores (GET .../cores-whatif, its default counts),
// with the recorded run, the critical path and the perfect-parallelism bound.
async function drawWhatif(sid, o) {
  const el = $("#overview-whatif-chart");
  if (!el) return;
  let w;
  try { w = await api.get(`/api/sessions/${sid}/cores-whatif`); } catch (e) { el.remove(); return; }
  const Plotly = await loadPlotly();
  const app = w.application;
  const labels = Object.keys(app.estimates_s);
  const x = labels.map((k) => app.slots[k]);
  const traces = [
    { x, y: labels.map((k) => app.estimates_s[k]), name: "estimated", mode: "lines+markers", line: { color: "#4a90d9" } },
    { x, y: labels.map((k) => app.perfect_parallelism_s[k]), name: "perfect parallelism", mode: "lines", line: { dash: "dot", color: "#8e9aaf" } },
    { x, y: x.map(() => app.critical_path_s), name: "critical path", mode: "lines", line: { dash: "dash", color: "#d9534f" } },
  ];
  if (app.recorded_cores) traces.push({ x: [app.recorded_cores], y: [app.wall_s], name: "recorded", mode: "markers", marker: { size: 10, color: "#f0a500" } });
  Plotly.newPlot(el, traces, {
    margin: { l: 44, r: 10, t: 8, b: 32 }, height: 170, font: { size: 11 }, paper_bgcolor: "rgba(0,0,0,0)",
    xaxis: { type: "log", title: { text: "cores (task slots)" }, tickvals: x },
    yaxis: { title: { text: "s" }, rangemode: "tozero" }, legend: { orientation: "h", y: 1.15 },
  }, { displayModeBar: false, responsive: true });
  el.dataset.points = String(x.length);
}

// Called once by start(): the Overview follows the address (a session opened bare shows it; a moment hides it).
export function bindOverview(h) {
  handlers = h;
  $("#overview-open").addEventListener("click", () => showOverview(true));
  const onRoute = () => {
    const r = parseHash();
    if (!r) { hideOverview(); shownFor = null; answer = null; return; }
    if (r.scope.length || r.batch !== null || r.port) { hideOverview(); return; }
    if (r.sid === shownFor) return;
    shownFor = r.sid;
    showOverview(false);
  };
  window.addEventListener("hashchange", onRoute);
  // a moment opened from anywhere (a finding, a blame bar, the timeline): the graph drawn at it is what is wanted
  const moved = new MutationObserver((records) => {
    if (records.some((r) => r.target.getAttribute(r.attributeName) !== r.oldValue && r.target.dataset.mode === "history")) hideOverview();
  });
  for (const el of [$("#graph"), $("#graph-canvas")]) {
    moved.observe(el, { attributes: true, attributeFilter: ["data-mode", "data-batch"], attributeOldValue: true });
  }
  onRoute();
  // a session still loading or live: the Overview on screen follows it (every 5 s)
  setInterval(() => {
    const el = $("#overview");
    if (el.hidden || api.bundle || !S.info || S.info.status === "done") return;
    showOverview(true);
  }, 5000);
}
