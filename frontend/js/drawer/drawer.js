// The drawer under the timeline: plotly charts (each operator's frontier over wall time, counts in flight),
// workers (per-executor batches), contract findings, marks and read errors. Plotly is the file shipped in the
// installed plotly package, loaded the first time a chart is drawn.

import * as api from "../api.js";
import { esc } from "../dom.js";
import { clock, duration } from "../times.js";
import { BlameView } from "./blame.js";
import { ExecutorView } from "./executors.js";
import { StreamingView } from "./structured_streaming.js";
import { PlanView } from "./plan.js";

let plotlyPromise = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "/vendor/plotly.min.js";
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => reject(new Error("could not load plotly.min.js"));
      document.head.appendChild(s);
    });
  }
  return plotlyPromise;
}

const LAYOUT = {
  margin: { l: 46, r: 150, t: 26, b: 30 },
  font: { size: 11, family: "system-ui, sans-serif", color: "#1f2733" },
  paper_bgcolor: "rgba(0,0,0,0)",
  plot_bgcolor: "#fbfcfd",
  showlegend: true,
  legend: { orientation: "v", x: 1.01, xanchor: "left", y: 1, font: { size: 10 } },
  xaxis: { gridcolor: "#e8ebef", zeroline: false },
  yaxis: { gridcolor: "#e8ebef", zeroline: false },
};
const CONFIG = { displayModeBar: false, responsive: true };

// The time a mark says completed in its scope (the server's `completes`: a finished job, a micro-batch), which
// the Blame tab splits; null for any other mark.
function blamedTime(m) {
  return Array.isArray(m.scope) && m.completes !== undefined && m.completes !== null ? m.completes : null;
}

// The SQL plan findings (plan.js draws the plans) as rows of the Findings tab; a click opens the operator's plan.
function planFindingRows(findings) {
  if (!findings.length) return "";
  return `<div class="muted">SQL plan findings (${findings.length})</div>` + findings.map((f, i) =>
    `<div class="list-row plan-finding-row" data-p="${i}"><span class="b">SQL ${f.execution}</span><span class="kind">${esc(f.finding)}</span><span>${esc(f.label)}; ${esc(f.recommendation)}</span><span class="muted">${esc(f.metric)}</span></div>`).join("");
}

export class Drawer {
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.tab = "charts";
    this.sid = null;
    this.scope = [];
    for (const b of root.querySelectorAll("#tabs button[data-tab]")) {
      b.addEventListener("click", () => this.select(b.dataset.tab));
    }
    root.querySelector("#drawer-toggle").addEventListener("click", () => {
      root.classList.toggle("collapsed");
      root.querySelector("#drawer-toggle").textContent = root.classList.contains("collapsed") ? "▴" : "▾";
      window.dispatchEvent(new Event("resize"));
    });
    this._last = 0;
    this.blame = new BlameView(root.querySelector("#tab-blame"), handlers, loadPlotly);
    this.executors = new ExecutorView(root.querySelector("#tab-executors"), handlers, loadPlotly);
    this.streaming = new StreamingView(root.querySelector("#tab-streaming"), handlers, loadPlotly);
    this.plan = new PlanView(root.querySelector("#tab-plan"), {
      ...handlers,
      planStages: (scope, stages) => { // an operator's stages: selected in the job graph, its tasks in Executors
        this.executors.emphasize(stages);
        return handlers.planStages && handlers.planStages(scope, stages);
      },
    });
  }

  open(sid, scope, info, at = null) {
    this.sid = sid;
    this.scope = scope;
    this.info = info;
    this.refresh(true, at);
  }

  select(tab) {
    this.tab = tab;
    for (const b of this.root.querySelectorAll("#tabs button[data-tab]")) b.classList.toggle("active", b.dataset.tab === tab);
    for (const t of this.root.querySelectorAll(".tab")) t.hidden = t.id !== `tab-${tab}`;
    this.root.classList.remove("collapsed");
    // a scope without ports never opened it (nothing drawn to open it after): open it on the page's session and
    // moment, and have the frames refresh it from now on, so its cursor follows the timeline
    const s = this.h.session ? this.h.session() : null;
    if (s && (!this.sid || !s.opened)) {
      this.open(s.sid, s.scope, s.info, s.at ?? null);
      if (this.h.opened) this.h.opened();
    } else this.refresh(true);
  }

  counts(info) {
    const f = this.root.querySelector("#findings-count");
    f.textContent = info.findings ? String(info.findings) : "";
    f.classList.toggle("bad", info.findings > 0);
    this.root.querySelector("#marks-count").textContent = info.marks ? String(info.marks) : "";
    const e = this.root.querySelector("#errors-count");
    e.textContent = info.errors ? String(info.errors) : "";
    e.classList.toggle("bad", info.errors > 0);
  }

  // Called often (every state change); refreshes at most every 2 s unless forced.
  async refresh(force = false, at = null) {
    if (!this.sid || this.root.classList.contains("collapsed")) return;
    const now = performance.now();
    if (at !== null) this._cursor = at;
    if (!force && now - this._last < 2000) { this._moveCursor(); return; }
    this._last = now;
    try {
      if (this.tab === "charts") await this.charts();
      else if (this.tab === "workers") await this.workers();
      else if (this.tab === "findings") await this.findings();
      else if (this.tab === "marks-tab") await this.marks();
      else if (this.tab === "errors") await this.errors();
      else if (this.tab === "blame") await this.blame.show(this.sid, this.scope);
      else if (this.tab === "executors") await this.executors.show(this.sid, this._cursor, this.blame.sid === this.sid ? this.blame.picked : null, this.scope, this._version());
      else if (this.tab === "streaming") await this.streaming.show(this.sid, this._cursor);
      else if (this.tab === "plan") await this.plan.show(this.sid, this.scope);
    } catch (e) {
      if (this.h.toast) this.h.toast(e.message);
    }
  }

  async charts() {
    const pinned = this.h.pinned ? this.h.pinned() : [];
    const params = { scope: api.scopeParam(this.scope) };
    const all = this.h.operators ? this.h.operators() : null;
    if (all && all.length > 12) {
      // a big scope: chart the pinned operators (selected, search hits) and spread the rest over the scope
      const pick = new Set(pinned.slice(0, 8));
      const step = Math.max(1, Math.floor(all.length / (12 - pick.size)));
      for (let i = 0; i < all.length && pick.size < 12; i += step) pick.add(all[i]);
      params.nodes = [...pick].join(",");
    }
    const data = await api.get(`/api/sessions/${this.sid}/series`, params);
    const Plotly = await loadPlotly();
    let ids = Object.keys(data.nodes);
    if (ids.length > 12) {
      const keep = new Set(pinned.map(String));
      ids = ids.filter((id) => keep.has(id)).concat(ids.filter((id) => !keep.has(id))).slice(0, 12);
    }
    const t0 = this.info && this.info.first_at ? this.info.first_at : 0;
    const traces = ids.map((id) => {
      const s = data.nodes[id];
      return { x: s.t.map((t) => t - t0), y: s.v, name: `${s.name} #${id}`, mode: "lines", line: { shape: "hv", width: pinned.includes(+id) ? 3 : 1.5 }, connectgaps: false };
    });
    this._shapes = () => (this._cursor ? [{ type: "line", x0: this._cursor - t0, x1: this._cursor - t0, yref: "paper", y0: 0, y1: 1, line: { color: "#3a6ff7", width: 1.5, dash: "dot" } }] : []);
    const fl = { ...LAYOUT, title: { text: "frontier per operator (least time still possible)", font: { size: 12 }, x: 0.01 }, xaxis: { ...LAYOUT.xaxis, title: { text: "seconds", standoff: 2 } }, shapes: this._shapes() };
    if (!traces.length) {
      fl.annotations = [{ text: "no operator in this scope has reported progress yet (open a nested scope)", showarrow: false,
        xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b7686" } }];
    }
    await Plotly.react(this.root.querySelector("#chart-frontier"), traces, fl, CONFIG);
    const c = data.counts;
    const ct = [
      { x: c.t.map((t) => t - t0), y: c.messages, name: "messages in flight", mode: "lines", line: { shape: "hv", color: "#2f6fdf" }, fill: "tozeroy", fillcolor: "rgba(47,111,223,.12)" },
      { x: c.t.map((t) => t - t0), y: c.capabilities, name: "capabilities held", mode: "lines", line: { shape: "hv", color: "#8a4bd6" } },
    ];
    const cl = { ...LAYOUT, title: { text: "counts in flight in this scope", font: { size: 12 }, x: 0.01 }, xaxis: { ...LAYOUT.xaxis, title: { text: "seconds", standoff: 2 } }, shapes: this._shapes() };
    await Plotly.react(this.root.querySelector("#chart-counts"), ct, cl, CONFIG);
    this.root.querySelector("#chart-frontier").dataset.traces = String(traces.length);
  }

  // What the session's answers depend on: its batch count (grows while live), from the page's session info.
  _version() {
    const s = this.h.session ? this.h.session() : null;
    return s && s.info ? `${s.info.status}/${s.info.batches}` : null;
  }

  _moveCursor() {
    if (this.tab === "executors") { this.executors.moveCursor(this._cursor); return; }
    if (this.tab === "streaming") { this.streaming.moveCursor(this._cursor); return; }
    if (this.tab !== "charts" || !window.Plotly || !this._shapes) return;
    for (const id of ["#chart-frontier", "#chart-counts"]) {
      const el = this.root.querySelector(id);
      if (el && el.data) window.Plotly.relayout(el, { shapes: this._shapes() });
    }
  }

  async workers() {
    const data = await api.get(`/api/sessions/${this.sid}/workers`);
    const t0 = this.info && this.info.first_at ? this.info.first_at : 0;
    let html = `<table><thead><tr><th>worker</th><th>batches</th><th>first</th><th>last</th><th>span</th></tr></thead><tbody>`;
    for (const w of data.workers) {
      html += `<tr class="clickable" data-worker="${w.worker}"><td>${w.worker < 0 ? "–" : w.worker}</td><td>${w.batches}</td><td>${w.first_batch}</td><td>${w.last_batch}</td><td>${duration(w.last_at - w.first_at)}</td></tr>`;
    }
    html += "</tbody></table><p class='muted'>Click a worker to list its batches.</p>";
    const table = this.root.querySelector("#workers-table");
    table.innerHTML = html;
    for (const tr of table.querySelectorAll("tr[data-worker]")) tr.addEventListener("click", () => this.workerBatches(+tr.dataset.worker));
    const Plotly = await loadPlotly();
    const traces = Object.entries(data.histogram).map(([w, counts]) => ({
      type: "bar", name: `worker ${w}`, x: data.buckets.map((b) => b - t0), y: counts,
    }));
    await Plotly.react(this.root.querySelector("#chart-workers"), traces,
      { ...LAYOUT, barmode: "stack", bargap: 0.05, title: { text: "batches per worker over time", font: { size: 12 }, x: 0.01 } }, CONFIG);
  }

  async workerBatches(worker) {
    const data = await api.get(`/api/sessions/${this.sid}/batches`, { worker, limit: 200 });
    const box = this.root.querySelector("#worker-batches");
    let html = `<div class="muted">worker ${worker}: ${data.total} batches${data.total > 200 ? " (first 200)" : ""}</div>`;
    for (const b of data.batches) {
      html += `<div class="list-row" data-batch="${b.batch}"><span class="b">#${b.batch}</span><span class="muted">seq ${b.seq ?? "–"}</span><span>${esc(b.cause ? JSON.stringify(b.cause) : "")}</span><span class="muted">${b.updates} updates</span></div>`;
    }
    box.innerHTML = html;
    for (const r of box.querySelectorAll(".list-row")) r.addEventListener("click", () => this.h.seek(+r.dataset.batch));
  }

  // Two kinds of finding: the Spark model's (stragglers, skewed stages and the findings that say what to do: marks
  // with a `finding`, also badges on the graph) and the progress contract's (batches that broke it). Each row goes to its scope at its batch.
  async findings() {
    const [data, spark, plan] = await Promise.all([
      api.get(`/api/sessions/${this.sid}/findings`, { limit: 500 }),
      api.get(`/api/sessions/${this.sid}/marks`, { finding: true, limit: 500 }),
      api.get(`/api/sessions/${this.sid}/plan`).catch(() => ({ executions: [] })), // no Spark log: no plans
    ]);
    const box = this.root.querySelector("#tab-findings");
    const planned = plan.executions.flatMap((e) => e.findings);
    let html = planFindingRows(planned);
    if (spark.total) {
      html += `<div class="muted">Spark findings: stragglers, skew, and what to change (${spark.total})</div>`;
      spark.marks.forEach((m, i) => {
        // a finding that says what to do (backend/spark/findings.py): its recommendation and the threshold that fired
        const th = m.threshold ? ` · ${m.threshold.name} ${m.threshold.value}` : "";
        const rec = m.recommendation ? `<div class="recommendation">${esc(m.recommendation)}<span class="muted">${esc(th)}</span></div>` : "";
        html += `<div class="list-row spark-finding ${esc(m.finding)}" data-s="${i}"><span class="b">batch ${m.after}</span><span class="kind">${esc(m.finding)}</span><span>${esc(m.label)}${rec}</span><span class="muted">scope [${m.scope || []}]</span></div>`;
      });
    }
    if (!data.total) {
      html += `<p class="muted">${this.info && !this.info.checked ? "Contract checking is off for this session." : "No contract findings: every batch kept the progress contract."}</p>`;
    } else {
      html += `<div class="muted">Progress-contract findings (${data.total})</div>`;
      data.findings.forEach((f, i) => {
        const batch = f.batch.index !== null ? f.batch.index + 1 : 0;
        html += `<div class="list-row contract-finding" data-i="${i}"><span class="b">batch ${batch}</span><span class="kind">${esc(f.kind)}</span><span>${esc(f.message)}</span><span class="muted">scope [${f.scope}] ${esc(f.port.join(","))}${f.batch.line ? ` · line ${f.batch.line}` : ""}</span></div>`;
      });
    }
    box.innerHTML = html;
    for (const r of box.querySelectorAll(".contract-finding")) {
      r.addEventListener("click", () => {
        const f = data.findings[+r.dataset.i];
        this.h.goto(f.scope, f.batch.index !== null ? f.batch.index + 1 : 0, f.port.join(","));
      });
    }
    for (const r of box.querySelectorAll(".spark-finding")) {
      r.addEventListener("click", () => {
        this.h.openFinding(spark.marks[+r.dataset.s]);
      });
    }
    for (const r of box.querySelectorAll(".plan-finding-row")) {
      r.addEventListener("click", () => {
        const f = planned[+r.dataset.p];
        this.plan.open(f.execution, f.operator);
        this.select("plan");
      });
    }
  }

  async marks() {
    const data = await api.get(`/api/sessions/${this.sid}/marks`, { limit: 2000 });
    const box = this.root.querySelector("#tab-marks-tab");
    const t0 = this.info && this.info.first_at ? this.info.first_at : 0;
    box.innerHTML = data.total ? data.marks.map((m, i) =>
      `<div class="list-row" data-i="${i}"><span class="b">batch ${m.after}</span><span class="muted">${m.at ? "+" + duration(m.at - t0) : ""}</span><span>${esc(m.label)}</span>${blamedTime(m) !== null ? `<button class="mark-blame" title="where this time's seconds went">blame</button>` : ""}</div>`).join("")
      : `<p class="muted">No marks in this session.</p>`;
    for (const r of box.querySelectorAll(".list-row")) r.addEventListener("click", () => this.h.seek(data.marks[+r.dataset.i].after));
    for (const b of box.querySelectorAll(".mark-blame")) {
      b.addEventListener("click", (ev) => {
        ev.stopPropagation();
        const m = data.marks[+b.closest(".list-row").dataset.i];
        this.blame.want(m.scope, blamedTime(m));
        this.select("blame");
      });
    }
  }

  async errors() {
    const data = await api.get(`/api/sessions/${this.sid}/errors`, { limit: 500 });
    const box = this.root.querySelector("#tab-errors");
    box.innerHTML = data.total ? data.errors.map((e) =>
      `<div class="list-row"><span class="b">line ${e.line}</span><span>${esc(e.reason)}</span></div>`).join("")
      : `<p class="muted">No corrupt lines or rejected batches.</p>`;
  }
}

